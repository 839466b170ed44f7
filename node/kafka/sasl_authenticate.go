package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SaslAuthenticate (key 36), versions 0-2.
//
// On a SASL listener, after SaslHandshake, each request carries one
// token of the mechanism (sasl.go): PLAIN's single message, SCRAM's
// client-first and client-final, or OAUTHBEARER's bearer token (RFC
// 7628: an invalid token is answered {"status":"invalid_token"} with no
// error, and the client's ^A then SASL_AUTHENTICATION_FAILED, as Kafka's
// OAuthBearerSaslServer); the answer carries the server's token.
// A failure is answered SASL_AUTHENTICATION_FAILED with a message that
// names the mechanism but not whether the user exists, and the
// connection closes. SessionLifetimeMs (v1+) is SASL.ReauthAfter
// (connections.max.reauth.ms, KIP-368; 0: none), or an OAUTHBEARER
// token's remaining life if shorter: the session ends then,
// whatever the version, and the connection must re-authenticate, with
// the same mechanism and principal, before its next request (sasl.go).
//
// Anywhere else (no SASL on the listener, or after authentication and
// outside a re-authentication) it is answered ILLEGAL_SASL_STATE, as
// Kafka's KafkaApis does.
func handleSASLAuthenticate(_ context.Context, s *Server, r *request) (kmsg.Response, error) {
	resp := r.body.(*kmsg.SASLAuthenticateRequest).ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	msg := "SaslAuthenticate request received after successful authentication" // Kafka's words, on any listener
	resp.ErrorMessage = &msg
	resp.SASLAuthBytes = []byte{}
	return resp, nil
}

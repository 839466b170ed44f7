package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SaslHandshake (key 17), version 1, listed from 0.
//
// On a SASL listener, before authentication, the handshake picks the
// mechanism (sasl.go); after it, with a session lifetime
// (SASL.ReauthAfter, KIP-368), it starts a re-authentication with the
// same mechanism (an OAUTHBEARER session always has one: its token's
// expiry). Anywhere else (a PLAINTEXT or SSL listener, or a SASL
// one without a lifetime after authentication) it is answered
// ILLEGAL_SASL_STATE, as Kafka's KafkaApis does.
//
// Kafka 4 dropped v0 (KIP-896), whose SASL tokens followed in bare
// frames without a request header: a v0 request closes the connection.
// ApiVersions still lists the range from 0 (api.listFrom0), because
// librdkafka uses the handshake only when the broker lists v0 and would
// otherwise send a bare token, and picks v1 since it is listed.
func handleSASLHandshake(_ context.Context, s *Server, r *request) (kmsg.Response, error) {
	resp := r.body.(*kmsg.SASLHandshakeRequest).ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	return resp, nil
}

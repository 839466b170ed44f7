package kafka

import "errors"

// The package's sentinel errors. Every reason the server closes a connection
// wraps one of the first five, so a log line or a test can tell them apart
// with errors.Is.
var (
	// ErrFrameTooLarge: a frame's size prefix exceeds
	// Options.MaxRequestBytes (socket.request.max.bytes), or a request is
	// over its API's own limit.
	ErrFrameTooLarge = errors.New("kafka: frame too large")
	// ErrNegativeFrame: a frame's size prefix is negative.
	ErrNegativeFrame = errors.New("kafka: negative frame size")
	// ErrUnknownAPI: the request's API key is not in the dispatch table.
	ErrUnknownAPI = errors.New("kafka: unknown api key")
	// ErrUnsupportedVersion: the request's version of a known API is out of
	// the supported range (ApiVersions is answered instead, see KIP-511).
	ErrUnsupportedVersion = errors.New("kafka: unsupported api version")
	// ErrMalformedRequest: a frame too short, a garbled header or a body
	// that does not decode at the version it claims.
	ErrMalformedRequest = errors.New("kafka: malformed request")

	// ErrServerClosed is returned by Serve after Shutdown or Close.
	ErrServerClosed = errors.New("kafka: server closed")
	// ErrInvalidOptions wraps every Options.Validate failure.
	ErrInvalidOptions = errors.New("kafka: invalid options")
)

// Errors for the client (a *kerr.Error in a Broker result) become the Kafka
// error code of a response through quorum.ErrorCode, the one mapper, shared
// with the controller's own answers.

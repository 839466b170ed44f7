// Package sasl holds the SASL mechanisms the Kafka listeners serve, as
// pure functions and small state machines with no sockets: PLAIN (RFC
// 4616), SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), and the
// parser of Kafka's JAAS configuration lines, where PLAIN's users live.
// node/kafka drives a mechanism from the tokens of SaslAuthenticate
// requests; the node looks SCRAM credentials up in the metadata image;
// tools derive credentials from passwords (sluice init --add-scram, the
// admin CLI).
//
// # SCRAM
//
// A Credential is what the server keeps for one user and mechanism, as
// KRaft's UserScramCredentialRecord: the salt, the iteration count,
// StoredKey = H(HMAC(SaltedPassword, "Client Key")) and ServerKey =
// HMAC(SaltedPassword, "Server Key"), with SaltedPassword = PBKDF2(HMAC-H,
// password, salt, iterations). Never the password, nor the salted one.
// NewCredential derives one from a password, CredentialFromSalted from a
// salted password (what AlterUserScramCredentials carries, KIP-554).
// PBKDF2 is the standard library's crypto/pbkdf2 (Go 1.24+), which
// golang.org/x/crypto/pbkdf2 now wraps.
//
// A ScramServer runs one exchange: client-first ("n,,n=user,r=nonce",
// optionally with a=authzid, which must be the user, and Kafka's
// tokenauth extension, refused) → server-first ("r=nonce+server
// nonce,s=salt,i=iterations", the server nonce 24 bytes from crypto/rand)
// → client-final ("c=biws,r=...,p=proof") → server-final ("v=signature").
// The proof is checked with constant-time comparisons. The client-final
// nonce must end with the server-first one (Kafka's rule, which
// librdkafka relies on: it repeats its own nonce in front). An unknown user
// gets a made-up salt (an HMAC of the name under a per-process secret,
// the same for every try) and fails at the proof, with the same error as
// a wrong password, so the exchange does not tell whether a user exists.
// Every failure is ErrAuthenticationFailed (or ErrBadMessage for a message
// that does not parse, wrapped by ErrAuthenticationFailed too): the client
// is told only that authentication failed.
//
// # PLAIN
//
// ParsePlain splits "authzid NUL user NUL password" (RFC 4616); an
// authzid that is not the user is refused, as Kafka's PlainSaslServer
// does. Plain.Check compares the password in constant time, and spends
// the same comparison on an unknown user.
//
// # OAUTHBEARER
//
// ParseOAuthBearer reads RFC 7628's client initial response
// (`n,[a=authzid],^Aauth=Bearer <token>^A[key=value^A...]^A`). An
// OAuthValidator checks a JWT as Kafka's broker-side validators do: with
// Keys (a JWKS, ParseJWKS: RSA of 2048 bits or more, EC P-256/384/521,
// use "sig") the signature through golang-jwt/jwt/v5, alg none refused;
// without, Kafka's default unsecured tokens (alg none, empty signature)
// only. Then exp (required; the session's end), iat (required when
// signed), nbf, with ClockSkew; the audience and issuer when set; the
// subject claim (the principal) and the scope claim. An OAuthServer runs
// the exchange: a valid token ends it, an invalid one is answered
// {"status":"invalid_token"} and fails at the client's next message.
//
// # JAAS
//
// ParseJAAS reads one login module entry of Kafka's sasl.jaas.config:
// `<class> <flag> key="value" key=value ... ;` with Java's JAAS quoting
// (double-quoted values, backslash escapes). The PLAIN users of a
// listener are its user_<name>="password" options, and the broker's own
// credentials for the inter-broker listener its username and password.
//
// # Principal mapping rules
//
// ParsePrincipalRules reads Kafka's ssl.principal.mapping.rules (KIP-371):
// `RULE:pattern/replacement/[L|U],...,DEFAULT`; PrincipalRules.Map gives
// the principal name of a TLS client certificate's distinguished name
// under the first rule whose pattern matches it whole ($1... in the
// replacement, lower- or upper-cased), ErrNoPrincipalRule if none does.
// Patterns are RE2: Java's back-references are refused when parsed.
//
// The parsers (ParseJAAS, ParsePlain, the SCRAM messages, the principal
// rules, ParseOAuthBearer, the token validator, ParseJWKS) are fuzzed with corpora under testdata/fuzz.
package sasl

package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/sluice-log/sluice/node/config"
	"github.com/sluice-log/sluice/node/sasl"
)

// jwksMaxBytes bounds a fetched JWKS.
const jwksMaxBytes = 1 << 20

// jwksKeys is the key set of sasl.oauthbearer.jwks.endpoint.url, fetched
// at start and refreshed (KIP-768's RefreshingHttpsJwks): every
// JWKSRefresh, and sooner when a token names a key id the set lacks (the
// issuer rotated), at most every JWKSRetryBackoff; failed fetches are
// retried with the backoff doubling to JWKSRetryBackoffMax, and the last
// good set stays in use meanwhile. Key is called from connection
// goroutines; run is the one refreshing goroutine.
type jwksKeys struct {
	o      *config.OAuthBearer
	client *http.Client
	log    *slog.Logger
	kick   chan struct{}
	mu     struct {
		sync.Mutex
		set     sasl.JWKS
		err     error // of the last fetch
		fetched time.Time
	}
}

// newJWKSKeys fetches the key set once. A file that does not load is an
// error (the operator's to fix); an https endpoint that does not answer
// is logged and retried by run, tokens failing until it does.
func newJWKSKeys(ctx context.Context, o *config.OAuthBearer, log *slog.Logger) (*jwksKeys, error) {
	j := &jwksKeys{o: o, log: log, kick: make(chan struct{}, 1)}
	if o.JWKSURL.Scheme == "https" {
		roots, err := x509.SystemCertPool()
		if err != nil {
			roots = x509.NewCertPool()
		}
		if o.JWKSTrustStore != "" {
			pem, err := os.ReadFile(o.JWKSTrustStore)
			if err != nil {
				return nil, fmt.Errorf("sluice.sasl.oauthbearer.jwks.endpoint.ssl.truststore.location: %w", err)
			}
			roots = x509.NewCertPool()
			if !roots.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("sluice.sasl.oauthbearer.jwks.endpoint.ssl.truststore.location: %s holds no PEM certificate", o.JWKSTrustStore)
			}
		}
		j.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, Proxy: http.ProxyFromEnvironment}}
	}
	if err := j.refresh(ctx); err != nil {
		if o.JWKSURL.Scheme == "file" {
			return nil, err
		}
		log.Error("node: the OAUTHBEARER JWKS did not load; tokens are refused until it does (retrying)", "err", err)
	}
	return j, nil
}

// Key implements sasl.Keys.
func (j *jwksKeys) Key(kid, alg string) (any, error) {
	j.mu.Lock()
	set, ferr := j.mu.set, j.mu.err
	j.mu.Unlock()
	if set.Len() == 0 {
		j.expedite()
		return nil, fmt.Errorf("no key set loaded from sasl.oauthbearer.jwks.endpoint.url %s yet: %v", j.o.JWKSURL.Redacted(), ferr)
	}
	k, err := set.Key(kid, alg)
	if errors.Is(err, sasl.ErrUnknownKey) {
		j.expedite()
	}
	return k, err
}

// expedite asks run for a refresh (a rotation may have added the key).
func (j *jwksKeys) expedite() {
	select {
	case j.kick <- struct{}{}:
	default:
	}
}

// fetch reads the key set from its URL.
func (j *jwksKeys) fetch(ctx context.Context) (sasl.JWKS, error) {
	u := j.o.JWKSURL
	var body []byte
	if u.Scheme == "file" {
		f, err := os.Open(u.Path)
		if err != nil {
			return sasl.JWKS{}, err
		}
		defer f.Close()
		if body, err = io.ReadAll(io.LimitReader(f, jwksMaxBytes+1)); err != nil {
			return sasl.JWKS{}, err
		}
	} else {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return sasl.JWKS{}, err
		}
		req.Header.Set("Accept", "application/json")
		resp, err := j.client.Do(req)
		if err != nil {
			return sasl.JWKS{}, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return sasl.JWKS{}, fmt.Errorf("GET %s: %s", u.Redacted(), resp.Status)
		}
		if body, err = io.ReadAll(io.LimitReader(resp.Body, jwksMaxBytes+1)); err != nil {
			return sasl.JWKS{}, err
		}
	}
	if len(body) > jwksMaxBytes {
		return sasl.JWKS{}, fmt.Errorf("%s: more than %d bytes", u.Redacted(), jwksMaxBytes)
	}
	return sasl.ParseJWKS(body)
}

// refresh fetches the set and, if it loads, uses it.
func (j *jwksKeys) refresh(ctx context.Context) error {
	set, err := j.fetch(ctx)
	if err != nil {
		err = fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url %s: %w", j.o.JWKSURL.Redacted(), err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.mu.err = err
	if err == nil {
		j.mu.set, j.mu.fetched = set, time.Now()
	}
	return err
}

// run refreshes the set until stop is closed.
func (j *jwksKeys) run(ctx context.Context, stop <-chan struct{}) {
	backoff := j.o.JWKSRetryBackoff
	failing := false
	j.mu.Lock()
	failing = j.mu.err != nil
	j.mu.Unlock()
	for {
		wait := j.o.JWKSRefresh
		if failing {
			wait = backoff
		}
		t := time.NewTimer(wait)
		select {
		case <-stop:
			t.Stop()
			return
		case <-t.C:
		case <-j.kick:
			t.Stop()
			// Rate-limit expedited refreshes to one per backoff.
			j.mu.Lock()
			since := time.Since(j.mu.fetched)
			j.mu.Unlock()
			if d := j.o.JWKSRetryBackoff - since; d > 0 {
				t := time.NewTimer(d)
				select {
				case <-stop:
					t.Stop()
					return
				case <-t.C:
				}
			}
		}
		err := j.refresh(ctx)
		switch {
		case err != nil:
			j.log.Warn("node: JWKS refresh failed; the last key set stays in use", "err", err, "retry_in", backoff)
			failing = true
			backoff = min(2*backoff, max(j.o.JWKSRetryBackoffMax, j.o.JWKSRetryBackoff))
		default:
			if failing {
				j.log.Info("node: JWKS loaded", "url", j.o.JWKSURL.Redacted())
			}
			failing, backoff = false, j.o.JWKSRetryBackoff
		}
	}
}

// oauthValidators builds the OAUTHBEARER validator of every listener that
// enables it, starting the JWKS refresher when one verifies signatures.
// Listeners share the broker's sasl.oauthbearer.* keys, so one key set.
func (n *Node) oauthValidators() error {
	var keys *jwksKeys
	n.oauth = map[string]*sasl.OAuthValidator{}
	for name, ls := range n.cfg.SASL {
		if ls.OAuth == nil {
			continue
		}
		if ls.OAuth.Unsecured() {
			n.log.Warn("node: OAUTHBEARER takes unsecured tokens (alg none, Kafka's default): anyone can claim any principal; set sasl.oauthbearer.jwks.endpoint.url", "listener", name)
			n.oauth[name] = ls.OAuth.Validator(nil)
			continue
		}
		if keys == nil {
			var err error
			if keys, err = newJWKSKeys(n.ctx, ls.OAuth, n.log); err != nil {
				return err
			}
			n.wg.Add(1)
			go func() {
				defer n.wg.Done()
				keys.run(n.ctx, n.stop)
			}()
		}
		n.oauth[name] = ls.OAuth.Validator(keys)
	}
	return nil
}

package sasl

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// ScramSpec is one MECHANISM=[key=value,...] of kafka-configs.sh's
// --add-config for users and kafka-storage.sh's --add-scram, e.g.
// SCRAM-SHA-256=[name=alice,iterations=8192,password=alice-secret] or
// SCRAM-SHA-512=[name=alice,salt="N3E=",saltedpassword="YCE=",iterations=4096].
type ScramSpec struct {
	Mechanism string
	// Attrs are the key=value pairs, quotes removed, keys lower-cased.
	Attrs map[string]string
}

// ParseScramSpecs parses a comma-separated list of MECHANISM=[...] (a
// mechanism alone, for --delete-config, has no attributes).
func ParseScramSpecs(s string) ([]ScramSpec, error) {
	var out []ScramSpec
	i := 0
	for i < len(s) {
		for i < len(s) && (s[i] == ',' || s[i] == ' ') {
			i++
		}
		if i == len(s) {
			break
		}
		start := i
		for i < len(s) && s[i] != '=' && s[i] != ',' {
			i++
		}
		spec := ScramSpec{Mechanism: strings.TrimSpace(s[start:i]), Attrs: map[string]string{}}
		if _, err := Scram(spec.Mechanism); err != nil {
			return nil, err
		}
		if i < len(s) && s[i] == '=' {
			i++
			if i >= len(s) || s[i] != '[' {
				return nil, fmt.Errorf("%s: want =[key=value,...]", spec.Mechanism)
			}
			i++
			for {
				for i < len(s) && (s[i] == ',' || s[i] == ' ') {
					i++
				}
				if i >= len(s) {
					return nil, fmt.Errorf("%s: ']' missing", spec.Mechanism)
				}
				if s[i] == ']' {
					i++
					break
				}
				ks := i
				for i < len(s) && s[i] != '=' && s[i] != ',' && s[i] != ']' {
					i++
				}
				k := strings.ToLower(strings.TrimSpace(s[ks:i]))
				if i >= len(s) || s[i] != '=' || k == "" {
					return nil, fmt.Errorf("%s: want key=value inside [ ]", spec.Mechanism)
				}
				i++
				var v string
				if i < len(s) && s[i] == '"' {
					end := strings.IndexByte(s[i+1:], '"')
					if end < 0 {
						return nil, fmt.Errorf("%s: %s: unterminated quote", spec.Mechanism, k)
					}
					v, i = s[i+1:i+1+end], i+2+end
				} else {
					vs := i
					for i < len(s) && s[i] != ',' && s[i] != ']' {
						i++
					}
					v = strings.TrimSpace(s[vs:i])
				}
				if _, dup := spec.Attrs[k]; dup {
					return nil, fmt.Errorf("%s: %s given twice", spec.Mechanism, k)
				}
				spec.Attrs[k] = v
			}
		}
		out = append(out, spec)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no SCRAM mechanism given (want e.g. SCRAM-SHA-256=[password=...])")
	}
	return out, nil
}

// Credential derives the spec's credential: from password (with a random
// salt, or salt= base64), or from salt and saltedpassword (base64), with
// iterations (default 4096).
func (sp ScramSpec) Credential() (Credential, error) {
	m, err := Scram(sp.Mechanism)
	if err != nil {
		return Credential{}, err
	}
	iter := DefaultIterations
	if v, ok := sp.Attrs["iterations"]; ok {
		if iter, err = strconv.Atoi(v); err != nil {
			return Credential{}, fmt.Errorf("%s: iterations %q is not a number", sp.Mechanism, v)
		}
	}
	if iter < MinIterations || iter > MaxIterations {
		return Credential{}, fmt.Errorf("%s: iterations %d: want %d to %d", sp.Mechanism, iter, MinIterations, MaxIterations)
	}
	var salt []byte
	if v, ok := sp.Attrs["salt"]; ok {
		if salt, err = base64.StdEncoding.DecodeString(v); err != nil || len(salt) == 0 {
			return Credential{}, fmt.Errorf("%s: salt is not base64", sp.Mechanism)
		}
	}
	pw, hasPW := sp.Attrs["password"]
	sp64, hasSalted := sp.Attrs["saltedpassword"]
	switch {
	case hasPW && hasSalted:
		return Credential{}, fmt.Errorf("%s: give password or saltedpassword, not both", sp.Mechanism)
	case hasPW && pw != "":
		return m.NewCredential(pw, salt, iter)
	case hasSalted:
		salted, err := base64.StdEncoding.DecodeString(sp64)
		if err != nil || len(salted) == 0 || salt == nil {
			return Credential{}, fmt.Errorf("%s: saltedpassword needs salt, both base64", sp.Mechanism)
		}
		return m.CredentialFromSalted(salted, salt, iter), nil
	}
	return Credential{}, fmt.Errorf("%s: give password=... (or salt and saltedpassword)", sp.Mechanism)
}

package sasl

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrNoPrincipalRule is returned by PrincipalRules.Map when no rule
// matches a distinguished name (Kafka's "No rules apply to ...").
var ErrNoPrincipalRule = errors.New("sasl: no ssl.principal.mapping.rules rule applies")

// PrincipalRules are Kafka's ssl.principal.mapping.rules (KIP-371): a
// comma-separated list of rules tried in order on the distinguished name
// of a TLS client certificate, the first that matches giving the
// principal's name:
//
//	DEFAULT                               the name as is
//	RULE:pattern/replacement/[L|U]        if the regular expression matches
//	                                      the whole name: replacement, with
//	                                      $1... for its groups, lower- or
//	                                      upper-cased with L or U
//
// A '/' or '\' inside the pattern or the replacement is escaped with
// '\'. The patterns are Go (RE2) regular expressions: Java's lazy
// quantifiers are there, back-references are not. The zero value is
// Kafka's default, DEFAULT: every name maps to itself.
type PrincipalRules struct {
	rules []principalRule
}

type principalRule struct {
	isDefault bool
	re        *regexp.Regexp
	repl      string
	lower     bool
	upper     bool
}

// ParsePrincipalRules parses the value of ssl.principal.mapping.rules.
func ParsePrincipalRules(s string) (PrincipalRules, error) {
	var out PrincipalRules
	rest := strings.TrimSpace(s)
	if rest == "" {
		return out, errors.New("sasl: ssl.principal.mapping.rules is empty (DEFAULT maps the name as is)")
	}
	for rest != "" {
		var r principalRule
		switch {
		case strings.HasPrefix(rest, "DEFAULT"):
			r.isDefault = true
			rest = rest[len("DEFAULT"):]
		case strings.HasPrefix(rest, "RULE:"):
			var pat, repl string
			var ok bool
			if pat, rest, ok = cutUnescaped(rest[len("RULE:"):]); !ok {
				return out, fmt.Errorf("sasl: ssl.principal.mapping.rules: rule %q has no '/' after its pattern", s)
			}
			repl, rest, ok = cutUnescaped(rest)
			if !ok { // the last '/' may be left out
				rest = ""
				if i := strings.IndexAny(repl, ", \t"); i >= 0 {
					repl, rest = repl[:i], repl[i:]
				}
			} else if len(rest) > 0 && (rest[0] == 'L' || rest[0] == 'U') {
				r.lower, r.upper = rest[0] == 'L', rest[0] == 'U'
				rest = rest[1:]
			}
			re, err := regexp.Compile("^(?:" + pat + ")$")
			if err != nil {
				return out, fmt.Errorf("sasl: ssl.principal.mapping.rules: pattern %q: %w", pat, err)
			}
			r.re, r.repl = re, javaReplacement(repl)
		default:
			return out, fmt.Errorf("sasl: ssl.principal.mapping.rules: %q: each rule is DEFAULT or RULE:pattern/replacement/[L|U]", rest)
		}
		out.rules = append(out.rules, r)
		rest = strings.TrimLeft(rest, " \t")
		if rest == "" {
			break
		}
		if rest[0] != ',' {
			return out, fmt.Errorf("sasl: ssl.principal.mapping.rules: %q: rules are separated by commas", rest)
		}
		rest = strings.TrimLeft(rest[1:], " \t")
		if rest == "" {
			return out, errors.New("sasl: ssl.principal.mapping.rules: a comma ends the list")
		}
	}
	return out, nil
}

// cutUnescaped splits s at its first '/' not escaped by '\', keeping
// the escapes (the regular expression reads them).
func cutUnescaped(s string) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '/':
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// javaReplacement turns a Java replacement string ($1, \x for a literal
// x) into Go's regexp.Expand template (${1}, $$).
func javaReplacement(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			if s[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(s[i])
			}
		case c == '$' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			j := i + 1
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			b.WriteString("${" + s[i+1:j] + "}")
			i = j - 1
		case c == '$':
			b.WriteString("$$")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Map returns the principal name of the distinguished name dn under
// the first rule that applies; ErrNoPrincipalRule if none does, or if
// the rule maps it to an empty name.
func (p PrincipalRules) Map(dn string) (string, error) {
	rules := p.rules
	if rules == nil {
		rules = []principalRule{{isDefault: true}}
	}
	for _, r := range rules {
		if r.isDefault {
			if dn == "" {
				return "", fmt.Errorf("%w: the name is empty", ErrNoPrincipalRule)
			}
			return dn, nil
		}
		m := r.re.FindStringSubmatchIndex(dn)
		if m == nil {
			continue
		}
		name := string(r.re.ExpandString(nil, r.repl, dn, m))
		switch {
		case r.lower:
			name = strings.ToLower(name)
		case r.upper:
			name = strings.ToUpper(name)
		}
		if name == "" {
			return "", fmt.Errorf("%w: %q maps to an empty name", ErrNoPrincipalRule, dn)
		}
		return name, nil
	}
	return "", fmt.Errorf("%w: %q", ErrNoPrincipalRule, dn)
}

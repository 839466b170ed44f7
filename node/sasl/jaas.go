package sasl

import (
	"errors"
	"fmt"
	"strings"
)

// ErrBadJAAS: a sasl.jaas.config value that does not parse.
var ErrBadJAAS = errors.New("bad JAAS configuration")

// Login module classes of Kafka's SASL mechanisms.
const (
	PlainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// JAAS is one login module entry of sasl.jaas.config.
type JAAS struct {
	// LoginModule is the class name.
	LoginModule string
	// Flag is required, requisite, sufficient or optional.
	Flag string
	// Options are the key=value pairs, in any order.
	Options map[string]string
}

// PlainUsers returns the user_<name>="password" options.
func (j JAAS) PlainUsers() Plain {
	out := Plain{}
	for k, v := range j.Options {
		if name, ok := strings.CutPrefix(k, "user_"); ok && name != "" {
			out[name] = v
		}
	}
	return out
}

// ParseJAAS parses Kafka's sasl.jaas.config: exactly one entry,
// `<class> <flag> [key=value ...];`, values bare words or double-quoted
// with backslash escapes, as Java's JAAS ConfigFile reads them.
func ParseJAAS(s string) (JAAS, error) {
	p := jaasParser{s: s}
	var j JAAS
	var err error
	if j.LoginModule, err = p.word("login module class"); err != nil {
		return j, err
	}
	if j.Flag, err = p.word("control flag"); err != nil {
		return j, err
	}
	switch strings.ToLower(j.Flag) {
	case "required", "requisite", "sufficient", "optional":
		j.Flag = strings.ToLower(j.Flag)
	default:
		return j, p.errorf("control flag %q: want required, requisite, sufficient or optional", j.Flag)
	}
	j.Options = map[string]string{}
	for {
		p.space()
		if p.i >= len(p.s) {
			return j, p.errorf("missing ';' at the end")
		}
		if p.s[p.i] == ';' {
			p.i++
			p.space()
			if p.i != len(p.s) {
				return j, p.errorf("one login module entry only (text after ';')")
			}
			return j, nil
		}
		k, err := p.word("option name")
		if err != nil {
			return j, err
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != '=' {
			return j, p.errorf("option %s: want '='", k)
		}
		p.i++
		p.space()
		v, err := p.value(k)
		if err != nil {
			return j, err
		}
		if _, dup := j.Options[k]; dup {
			return j, p.errorf("option %s given twice", k)
		}
		j.Options[k] = v
	}
}

type jaasParser struct {
	s string
	i int
}

func (p *jaasParser) errorf(format string, a ...any) error {
	return fmt.Errorf("%w: at byte %d: %s", ErrBadJAAS, p.i, fmt.Sprintf(format, a...))
}

func (p *jaasParser) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func isWordByte(c byte) bool {
	return c > ' ' && c < 0x7f && strings.IndexByte("=;\"", c) < 0
}

// word reads a bare token.
func (p *jaasParser) word(what string) (string, error) {
	p.space()
	start := p.i
	for p.i < len(p.s) && isWordByte(p.s[p.i]) {
		p.i++
	}
	if p.i == start {
		return "", p.errorf("want %s", what)
	}
	return p.s[start:p.i], nil
}

// value reads a bare word or a double-quoted string.
func (p *jaasParser) value(k string) (string, error) {
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return p.word("value of " + k)
	}
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch c {
		case '"':
			return b.String(), nil
		case '\\':
			if p.i >= len(p.s) {
				return "", p.errorf("value of %s ends in a backslash", k)
			}
			b.WriteByte(p.s[p.i])
			p.i++
		default:
			b.WriteByte(c)
		}
	}
	return "", p.errorf("value of %s: unterminated quote", k)
}

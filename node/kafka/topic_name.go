package kafka

import "fmt"

// maxTopicNameLength is Kafka's limit (Topic.MAX_NAME_LENGTH).
const maxTopicNameLength = 249

// validateTopicName applies Kafka's Topic.validate: not empty, not "." or
// "..", at most 249 characters of [a-zA-Z0-9._-]. The error is the message
// for INVALID_TOPIC_EXCEPTION. Collisions between '.' and '_' need the
// existing topics and are the Broker's to report.
func validateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("topic name is illegal, it can't be empty")
	case name == "." || name == "..":
		return fmt.Errorf("topic name cannot be %q", name)
	case len(name) > maxTopicNameLength:
		return fmt.Errorf("topic name is longer than %d characters", maxTopicNameLength)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("topic name %q contains a character other than ASCII alphanumerics, '.', '_' and '-'", name)
		}
	}
	return nil
}

// ValidTopicName reports whether name is a legal Kafka topic name (for the
// node's auto-creation, which must not create what CreateTopics refuses).
func ValidTopicName(name string) bool { return validateTopicName(name) == nil }

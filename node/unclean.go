package node

import (
	"strconv"

	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/quorum"
)

// UncleanElectionsKey is a read-only, Sluice-only topic "config" that
// DescribeConfigs answers only when asked for by name: the number of
// unclean leader elections the metadata image records for the topic's
// partitions (each one may have lost acknowledged records). It is how the
// admin CLI (`sluice cluster health`) sees them through the Kafka protocol
// alone; asking for all configs leaves it out, so Kafka's tools and
// clients never see a config they do not know.
const UncleanElectionsKey = "sluice.unclean.leader.elections"

// uncleanEntry is the UncleanElectionsKey entry of topic t.
func uncleanEntry(t *quorum.Topic) kafka.ConfigEntry {
	n := 0
	for _, p := range t.Partitions {
		n += len(p.UncleanElections)
	}
	return kafka.ConfigEntry{
		Name: UncleanElectionsKey, Value: strconv.Itoa(n), ReadOnly: true, Type: typeInt,
		Doc: "read-only: unclean leader elections recorded for this topic's partitions (acknowledged records may have been lost)",
	}
}

// askedFor reports whether keys (nil: all configs) names key explicitly.
func askedFor(keys []string, key string) bool {
	for _, k := range keys {
		if k == key {
			return true
		}
	}
	return false
}

package admin

import (
	"strings"
	"testing"
)

// TestLeadersElect: a preferred election where every preferred replica
// leads already says so, for one partition and for all; JSON has one row
// per partition; bad arguments and an unknown topic are clear errors.
func TestLeadersElect(t *testing.T) {
	_, bootstrap := startCluster(t, 3)
	mustRun(t, bootstrap, "topics", "create", "el", "--partitions", "3", "--replication-factor", "3")
	out := mustRun(t, bootstrap, "leaders", "elect", "--type", "preferred", "--topic", "el")
	if !strings.Contains(out, "Valid replica already elected for partitions el-0, el-1, el-2") {
		t.Fatalf("preferred election on a balanced topic:\n%s", out)
	}
	rows := decode[[]ElectionResult](t, mustRun(t, bootstrap, "leaders", "elect", "--election-type", "PREFERRED", "--topic", "el", "--partition", "1", "--format", "json"))
	if len(rows) != 1 || rows[0].Partition != 1 || rows[0].Outcome != "not-needed" {
		t.Fatalf("json rows: %+v", rows)
	}
	if out := mustRun(t, bootstrap, "leaders", "elect", "--type", "preferred", "--all-topic-partitions"); !strings.Contains(out, "el-2") {
		t.Fatalf("all partitions:\n%s", out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"leaders", "elect", "--type", "random", "--topic", "el"}, "want preferred or unclean"},
		{[]string{"leaders", "elect", "--type", "preferred"}, "--all-topic-partitions"},
		{[]string{"leaders", "elect", "--type", "preferred", "--topic", "nope"}, `topic "nope" does not exist: create it`},
	} {
		if out, err := run(t, bootstrap, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("sluice %s: %v\n%s", strings.Join(tc.args, " "), err, out)
		}
	}
}

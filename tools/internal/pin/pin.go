//go:build tools

// Package pin keeps the pinned dependency set of DESIGN.md in go.mod before
// every module is imported by real code. It is never built into bin/sluice.
package pin

import (
	_ "github.com/cockroachdb/datadriven"
	_ "github.com/cockroachdb/pebble/v2"
	_ "github.com/hashicorp/go-metrics"
	_ "github.com/hashicorp/memberlist"
	_ "github.com/hashicorp/raft"
	_ "github.com/hashicorp/raft-boltdb/v2"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/viper"
	_ "github.com/twmb/franz-go/pkg/kadm"
	_ "github.com/twmb/franz-go/pkg/kgo"
	_ "github.com/twmb/franz-go/pkg/kmsg"
)

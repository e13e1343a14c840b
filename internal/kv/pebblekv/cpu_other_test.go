//go:build !linux

package pebblekv_test

import "time"

func threadCPU() (time.Duration, bool) { return 0, false }

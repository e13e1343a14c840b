package memkv_test

import (
	"testing"

	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/kvtest"
	"github.com/partita/partita/internal/kv/memkv"
)

func TestConformance(t *testing.T) {
	kvtest.Run(t, func(t *testing.T) kv.DB { return memkv.New() })
}

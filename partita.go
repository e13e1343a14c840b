// Package partita is a self-hosted server that speaks the Azure Table
// storage REST API, so applications built on the official Azure SDKs run
// against it by changing only their connection string.
//
// This root package is the domain: what a Table server is (entities, keys,
// queries, batches, error codes and the Store contract). It imports only the
// standard library and the leaf packages edm and odata. How requests arrive
// (internal/httpapi) and where data lives (internal/tablestore over an
// internal/kv engine) are decided elsewhere and wired in cmd/partita.
package partita

// Version is the partita release, reported by `partita version`.
var Version = "0.1.0-dev"

package pgkv

import "github.com/jackc/pgx/v5/pgxpool"

// PoolStat returns the connection pool's figures, for the Prometheus
// collector.
func (db *DB) PoolStat() *pgxpool.Stat { return db.pool.Stat() }

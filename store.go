package partita

import (
	"context"
	"errors"

	"github.com/partita/partita/odata"
)

// Table is a table of an account.
type Table struct {
	Account string
	// Name is the name as given at creation; lookups ignore case.
	Name string
}

// FoldTableName returns the form in which table names are compared and
// keyed. Names are case-insensitive in ASCII, the only letters a table name
// can hold (docs/COMPATIBILITY.md §2), so only A-Z are lowered. Unicode case
// mapping (strings.ToLower, strings.EqualFold) is not used: it would make a
// name Create Table refuses denote a table that exists, "\u212Aay" (the
// Kelvin sign) the table "kay" and "\u0130tems" the table "items".
func FoldTableName(name string) string {
	for i := 0; i < len(name); i++ {
		if c := name[i]; 'A' <= c && c <= 'Z' {
			b := []byte(name)
			for j := i; j < len(b); j++ {
				if c := b[j]; 'A' <= c && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return name
}

// SameTable reports whether two table names denote the same table:
// FoldTableName(a) == FoldTableName(b), without allocating.
func SameTable(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// TableQuery asks for a page of an account's tables.
type TableQuery struct {
	Filter odata.Expr // on TableName only; nil for all
	Top    int        // 1..1000; 0 means 1000
	// NextTableName resumes after a previous page (inclusive); "" to start.
	NextTableName string
}

// TablePage is one page of Query Tables.
type TablePage struct {
	Tables []Table
	// NextTableName is the resume point, "" when there are no more tables.
	NextTableName string
}

// Condition is an If-Match precondition.
type Condition struct {
	Kind  ConditionKind
	Ticks int64 // the Timestamp the ETag names, for IfETag
}

// ConditionKind says which precondition a write carries.
type ConditionKind uint8

const (
	// Unconditional: no If-Match. For PUT/MERGE this makes the write an
	// upsert.
	Unconditional ConditionKind = iota
	// IfExists is If-Match: *.
	IfExists
	// IfETag is If-Match: <etag>.
	IfETag
)

// OpKind is the kind of a write operation.
type OpKind uint8

// The write operations of the Table service.
const (
	OpInsert          OpKind = iota + 1 // POST: fail if the entity exists
	OpReplace                           // PUT with If-Match
	OpMerge                             // MERGE/PATCH with If-Match
	OpInsertOrReplace                   // PUT without If-Match
	OpInsertOrMerge                     // MERGE/PATCH without If-Match
	OpDelete                            // DELETE
)

var opNames = [...]string{"", "InsertEntity", "UpdateEntity", "MergeEntity", "InsertOrReplaceEntity", "InsertOrMergeEntity", "DeleteEntity"}

func (k OpKind) String() string {
	if int(k) < len(opNames) {
		return opNames[k]
	}
	return "OpKind(?)"
}

// Op is one write. For OpDelete only the Entity's keys are used.
type Op struct {
	Kind   OpKind
	Entity *Entity
	If     Condition
}

// Result is the outcome of a successful write: the new Timestamp (zero for
// a delete). It is the one way a write reports it: the store does not
// change the Op's entity.
type Result struct {
	Timestamp int64
}

// ETag returns the ETag of the written entity.
func (r Result) ETag() string { return FormatETag(r.Timestamp) }

// Query asks for entities of a table.
type Query struct {
	Filter odata.Expr // nil for all
	Top    int        // 1..1000; 0 means 1000
	// Next resumes a previous query at this key (inclusive); nil to start.
	Next *Key
	// Within, when set, is the only part of the key space the query may
	// read (a shared access signature's key range): the plan's ranges are
	// clipped to it (odata.Plan.Clip), so no key outside it is read,
	// counted in QueryInfo.Examined or returned as QueryInfo.Next.
	Within *odata.Range
	// Borrow promises that the callback keeps nothing of the entity it is
	// given (no string, slice or the entity itself) after it returns, so
	// the store may hand it property names and values that alias its read
	// buffers instead of copies. The keys are always the callback's to keep.
	// In an invariants build (-tags invariants) the store lends copies and
	// poisons them when the callback returns, so a breach fails tests.
	Borrow bool
}

// QueryInfo describes how a query page was produced.
type QueryInfo struct {
	// Next is the first key not yet examined, nil when the query is
	// complete.
	Next *Key
	// Class is the query class the planner chose.
	Class odata.Class
	// Examined counts the entities read to produce the page.
	Examined int
}

// Store is the service contract the HTTP layer uses. Every method returns
// *Error for conditions a client caused (the codes are listed per method)
// and wrapped errors (reported as InternalError) otherwise. Implementations
// are safe for concurrent use.
type Store interface {
	// CreateTable creates a table. Codes: TableAlreadyExists,
	// TableBeingDeleted, InvalidResourceName, OutOfRangeInput, InvalidInput.
	CreateTable(ctx context.Context, account, name string) (Table, error)
	// DeleteTable drops a table at once; its entities are purged in the
	// background. Codes: ResourceNotFound.
	DeleteTable(ctx context.Context, account, name string) error
	// GetTable returns a table. Codes: ResourceNotFound.
	GetTable(ctx context.Context, account, name string) (Table, error)
	// QueryTables returns a page of tables in name order.
	QueryTables(ctx context.Context, account string, q TableQuery) (TablePage, error)

	// GetEntity returns one entity. Codes: TableNotFound, ResourceNotFound.
	GetEntity(ctx context.Context, account, table string, key Key) (*Entity, error)
	// QueryEntities calls fn for each matching entity in key order, at most
	// q.Top of them. The entity passed to fn is valid only during the call.
	// Codes: TableNotFound.
	QueryEntities(ctx context.Context, account, table string, q Query, fn func(*Entity) error) (QueryInfo, error)
	// Write applies one write operation and returns the entity's new
	// Timestamp in its Result; op.Entity is left as it was.
	// Codes: TableNotFound, ResourceNotFound, EntityAlreadyExists,
	// UpdateConditionNotSatisfied and the validation codes of
	// Entity.Validate.
	Write(ctx context.Context, account, table string, op Op) (Result, error)
	// WriteBatch applies every op atomically, or none. All ops must share a
	// PartitionKey and name distinct entities (CheckEntityGroup): a batch
	// that breaks this fails whole with CommandsInBatchActOnDifferentPartitions
	// or InvalidDuplicateRow. A failing op is reported as *BatchError with
	// its index. The Results are in the order of ops, as Write's.
	WriteBatch(ctx context.Context, account, table string, ops []Op) ([]Result, error)

	// GetTableACL returns a table's stored access policies in their stored
	// form (nil when none). Codes: TableNotFound.
	GetTableACL(ctx context.Context, account, table string) ([]byte, error)
	// SetTableACL replaces a table's stored access policies. Codes:
	// TableNotFound.
	SetTableACL(ctx context.Context, account, table string, acl []byte) error
	// GetServiceProperties returns an account's service properties in
	// their stored form (nil when never set).
	GetServiceProperties(ctx context.Context, account string) ([]byte, error)
	// SetServiceProperties stores an account's service properties.
	SetServiceProperties(ctx context.Context, account string, props []byte) error
}

// ErrStopPage may be returned by the callback of QueryEntities to end the
// page early; the store then reports the next key as the continuation.
var ErrStopPage = errors.New("partita: stop page")

// CheckEntityGroup checks the rules of an entity group transaction that its
// operations alone decide: one PartitionKey, each entity at most once. The
// first operation that breaks one is reported as *BatchError with the
// service's code (CommandsInBatchActOnDifferentPartitions,
// InvalidDuplicateRow).
func CheckEntityGroup(ops []Op) error {
	if len(ops) == 0 {
		return nil
	}
	seen := make(map[string]struct{}, len(ops)) // RowKeys: one partition
	pk := ops[0].Entity.PartitionKey
	for i, op := range ops {
		if op.Entity.PartitionKey != pk {
			return &BatchError{Index: i, Err: NewError(CodeCommandsInBatchActOnDifferentPartitions, MsgDifferentPartitions)}
		}
		if _, dup := seen[op.Entity.RowKey]; dup {
			return &BatchError{Index: i, Err: NewError(CodeInvalidDuplicateRow, MsgDuplicateRow)}
		}
		seen[op.Entity.RowKey] = struct{}{}
	}
	return nil
}

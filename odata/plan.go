package odata

import (
	"slices"
	"strconv"
	"strings"

	"github.com/partita/partita/edm"
)

// Class is the cost class of a query, from cheapest to most expensive, in
// the terms of the Azure Table design guide.
type Class uint8

const (
	ClassPoint     Class = iota // single entities by PartitionKey and RowKey
	ClassRange                  // RowKey ranges inside single partitions
	ClassPartition              // whole partitions
	ClassTable                  // ranges spanning partitions, or the whole table
)

var classNames = [...]string{"point", "range", "partition", "table"}

func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

// PosKind is the kind of a Position.
type PosKind uint8

const (
	Unbounded       PosKind = iota // as a start: before everything; as an end: after everything
	BeforePartition                // just before the first key with PartitionKey == PK
	AfterPartition                 // just after the last key with PartitionKey == PK
	BeforeKey                      // just before key (PK, RK)
	AfterKey                       // just after key (PK, RK)
)

// Position is a point between keys of the clustered index ordered by
// (PartitionKey, RowKey), each compared with edm.CompareStrings. No key lies
// at a position. BeforeKey(PK, "") and BeforePartition(PK) are the same
// point.
type Position struct {
	Kind   PosKind
	PK, RK string
}

// Range selects the keys k with Start < k < End.
type Range struct{ Start, End Position }

// Plan says which parts of the key space a query has to scan.
type Plan struct {
	Class Class
	// Ranges are sorted, non-overlapping and non-empty (Start < End), in key
	// order. A plan without PartitionKey bounds has the single range
	// Unbounded..Unbounded. Ranges is empty when the key conditions cannot
	// all hold, for example PartitionKey eq 'a' and PartitionKey eq 'b';
	// Class is then ClassPoint.
	Ranges []Range
}

// MaxRanges is the most ranges a plan has. Plans that would need more are
// coarsened.
const MaxRanges = 1000

// Names of the key properties.
const (
	PartitionKey = "PartitionKey"
	RowKey       = "RowKey"
)

// PlanQuery returns the key ranges a scan for e has to visit. The plan is an
// over-approximation: every entity matching e lies in one of the ranges, but
// the ranges may hold entities that do not match, so the caller evaluates e
// on every entity it scans. Scanning the ranges in order yields entities in
// key order.
//
// Only comparisons of PartitionKey and RowKey with string literals narrow
// the plan; not is pushed down to them (not (RowKey lt 'x') is
// RowKey ge 'x'), and, or and ne combine their ranges. A comparison of a key
// with a literal of another type is a constant (docs/COMPATIBILITY.md §7 rule 3), as
// is a bare key property (false) and a Boolean literal; a filter that is
// constant false has no ranges, so nothing is read.
func PlanQuery(e Expr) Plan {
	var bs []box
	if e == nil {
		bs = fullBoxes()
	} else {
		var pl planner
		bs = pl.boxes(e, false)
	}
	return boxesToPlan(bs)
}

// planner bounds the work of planning one filter. Each and costs the
// product of its sides' boxes and each or their sum, so a long chain of
// conditions on a key (RowKey ne '1' and RowKey ne '2' and …, 3,000 of
// them fit in a request line) kept ~MaxRanges boxes through every step:
// ~250 ms of CPU and ~400 MB allocated for one 64 KiB request. Past
// planWork the planner coarsens every result to one box, which is still
// an over-approximation (the caller evaluates the filter on each entity),
// so a hostile filter reads more keys, within the scan's time budget,
// instead of costing the planner quadratic time.
type planner struct{ work int }

// planWork is the box operations one filter may spend before coarsening:
// four times what one and may compute. After it each condition costs a
// few boxes: 3,000 conditions plan in ~2.6 ms (BenchmarkPlanLongChain).
// The filters the guide's patterns write (a few ranges, a union of a few
// hundred keys) spend a fraction of it.
const planWork = 4 * productBudget

// A box is the set of keys whose PartitionKey lies in pk and RowKey in rk.
// The planner over-approximates the keys that satisfy an expression with a
// union of boxes.
type box struct{ pk, rk interval }

// interval is a set of strings between two bounds.
type interval struct{ lo, hi bound }

type boundKind uint8

const (
	none boundKind = iota // unbounded
	incl                  // inclusive
	excl                  // exclusive
)

type bound struct {
	kind boundKind
	s    string
}

func (iv interval) isFull() bool { return iv.lo.kind == none && iv.hi.kind == none }
func (iv interval) isPoint() bool {
	return iv.lo.kind == incl && iv.hi.kind == incl && iv.lo.s == iv.hi.s
}

func (iv interval) isEmpty() bool {
	if iv.hi.kind == excl && iv.hi.s == "" {
		return true // nothing sorts before ""
	}
	if iv.lo.kind == none || iv.hi.kind == none {
		return false
	}
	c := edm.CompareStrings(iv.lo.s, iv.hi.s)
	return c > 0 || c == 0 && (iv.lo.kind == excl || iv.hi.kind == excl)
}

// tighter returns the tighter of two lower (lower=true) or upper bounds.
func tighter(a, b bound, lower bool) bound {
	if a.kind == none {
		return b
	}
	if b.kind == none {
		return a
	}
	c := edm.CompareStrings(a.s, b.s)
	if !lower {
		c = -c
	}
	switch {
	case c > 0:
		return a
	case c < 0:
		return b
	case a.kind == excl:
		return a
	}
	return b
}

// looser returns the looser of two lower (lower=true) or upper bounds.
func looser(a, b bound, lower bool) bound {
	if a.kind == none {
		return a
	}
	if b.kind == none {
		return b
	}
	c := edm.CompareStrings(a.s, b.s)
	if !lower {
		c = -c
	}
	switch {
	case c < 0:
		return a
	case c > 0:
		return b
	case a.kind == incl:
		return a
	}
	return b
}

func (iv interval) intersect(o interval) interval {
	return interval{lo: tighter(iv.lo, o.lo, true), hi: tighter(iv.hi, o.hi, false)}
}

func (iv interval) hull(o interval) interval {
	return interval{lo: looser(iv.lo, o.lo, true), hi: looser(iv.hi, o.hi, false)}
}

func (b box) isFull() bool { return b.pk.isFull() && b.rk.isFull() }

func fullBoxes() []box { return []box{{}} }

// opIntervals returns the strings s with s op v, as one or two intervals.
func opIntervals(op Op, v string) []interval {
	switch op {
	case Eq:
		return []interval{{lo: bound{incl, v}, hi: bound{incl, v}}}
	case Ne:
		return []interval{{hi: bound{excl, v}}, {lo: bound{excl, v}}}
	case Gt:
		return []interval{{lo: bound{excl, v}}}
	case Ge:
		if v == "" {
			return []interval{{}} // every key: the whole partition, not a range
		}
		return []interval{{lo: bound{incl, v}}}
	case Lt:
		return []interval{{hi: bound{excl, v}}}
	case Le:
		return []interval{{hi: bound{incl, v}}}
	}
	return []interval{{}}
}

// boxes over-approximates the keys satisfying e (neg=false) or not e
// (neg=true).
func (pl *planner) boxes(e Expr, neg bool) []box {
	switch e := e.(type) {
	case *And:
		if neg {
			return pl.union(pl.boxes(e.L, true), pl.boxes(e.R, true))
		}
		return pl.intersect(pl.boxes(e.L, false), pl.boxes(e.R, false))
	case *Or:
		if neg {
			return pl.intersect(pl.boxes(e.L, true), pl.boxes(e.R, true))
		}
		return pl.union(pl.boxes(e.L, false), pl.boxes(e.R, false))
	case *Not:
		return pl.boxes(e.X, !neg)
	case *Compare:
		if e.Prop != PartitionKey && e.Prop != RowKey {
			return fullBoxes()
		}
		if e.Value.Type != edm.String {
			// Keys are strings: a mismatch acts as key < literal.
			if opHolds(e.Op, -1) != neg {
				return fullBoxes()
			}
			return nil
		}
		op := e.Op
		if neg {
			op = op.Negate()
		}
		ivs := opIntervals(op, e.Value.Str)
		bs := make([]box, 0, len(ivs))
		for _, iv := range ivs {
			if iv.isEmpty() {
				continue
			}
			if e.Prop == PartitionKey {
				bs = append(bs, box{pk: iv})
			} else {
				bs = append(bs, box{rk: iv})
			}
		}
		return bs
	case *BoolProp:
		if (e.Prop == PartitionKey || e.Prop == RowKey) && !neg {
			return nil // a key is never a Boolean
		}
		return fullBoxes()
	case *BoolLit:
		if e.Value != neg {
			return fullBoxes()
		}
		return nil // constant false: nothing to read
	}
	return fullBoxes()
}

// union appends b to a. Every result of boxes is used once, by its
// parent, so a's array is free to grow: a chain of n ors costs O(n), not
// the O(n²) of copying both sides at each step. A list that holds a full
// box is that box alone (fullBoxes), so checking for one is O(1).
func (pl *planner) union(a, b []box) []box {
	if isFullList(a) || isFullList(b) {
		return fullBoxes()
	}
	out := append(a, b...)
	pl.work += len(b)
	if len(out) > MaxRanges || (len(out) > 1 && pl.work > planWork) {
		return pl.coarsen(out, MaxRanges)
	}
	return out
}

func isFullList(bs []box) bool { return len(bs) == 1 && bs[0].isFull() }

func (pl *planner) intersect(a, b []box) []box {
	if len(a) == 0 || len(b) == 0 {
		return nil
	}
	if len(a) == 1 && a[0].isFull() {
		return b
	}
	if len(b) == 1 && b[0].isFull() {
		return a
	}
	// Many of the pairwise intersections are usually empty, so allow some
	// more work than MaxRanges before coarsening the inputs.
	if len(a)*len(b) > productBudget {
		if len(a) < len(b) {
			a, b = b, a
		}
		a = pl.coarsen(a, max(productBudget/len(b), 1))
		if len(a)*len(b) > productBudget {
			b = pl.coarsen(b, max(productBudget/len(a), 1))
		}
	}
	if pl.work+len(a)*len(b) > planWork {
		// Past the budget each step stays small: a box per partition
		// while a few, and one for the rest.
		a, b = pl.group(a, coarseBoxes), pl.group(b, coarseBoxes)
	}
	pl.work += len(a) * len(b)
	var out []box
	for _, x := range a {
		for _, y := range b {
			z := box{pk: x.pk.intersect(y.pk), rk: x.rk.intersect(y.rk)}
			if !z.pk.isEmpty() && !z.rk.isEmpty() {
				out = append(out, z)
			}
		}
	}
	if len(out) > MaxRanges {
		return pl.coarsen(out, MaxRanges)
	}
	return out
}

// productBudget is how many box intersections one and may compute.
const productBudget = 4 * MaxRanges

// coarseBoxes is how many boxes coarsen keeps per side once the
// planner's work budget is spent.
const coarseBoxes = 16

// coarsen returns at most limit boxes holding every key of bs: the boxes
// of one partition become one (the hull of their RowKey intervals), and
// those over several partitions one more, so a filter naming a few
// partitions and many RowKeys still reads only those partitions (a hull of
// all of them read every partition in between: PartitionKey 'p03' or 'p17'
// with 501 RowKeys read p03 to p17 whole); when that leaves more than
// limit, one box holds them all.
func (pl *planner) coarsen(bs []box, limit int) []box {
	if len(bs) <= limit {
		return bs
	}
	return pl.group(bs, limit)
}

// group is coarsen whatever the number of boxes: a box per partition and
// one for the rest, or one box when that is more than limit.
func (pl *planner) group(bs []box, limit int) []box {
	if len(bs) <= 1 {
		return bs
	}
	pl.work += len(bs)
	var out []box
	var at map[string]int // a partition's box in out, past a few
	spread := -1          // the box in out holding the boxes over several partitions
	for _, b := range bs {
		if !b.pk.isPoint() {
			if spread < 0 {
				spread = len(out)
				out = append(out, b)
			} else {
				out[spread].pk = out[spread].pk.hull(b.pk)
				out[spread].rk = out[spread].rk.hull(b.rk)
			}
			continue
		}
		i, ok := -1, false
		if at != nil {
			i, ok = at[b.pk.lo.s]
		} else {
			for j, o := range out {
				if j != spread && o.pk.lo.s == b.pk.lo.s {
					i, ok = j, true
					break
				}
			}
		}
		if ok {
			out[i].rk = out[i].rk.hull(b.rk)
			continue
		}
		if out = append(out, b); len(out) > limit {
			return []box{hull(bs)}
		}
		if at != nil {
			at[b.pk.lo.s] = len(out) - 1
		} else if len(out) > coarseBoxes {
			at = make(map[string]int, len(out))
			for j, o := range out {
				if j != spread {
					at[o.pk.lo.s] = j
				}
			}
		}
	}
	if len(out) > limit {
		return []box{hull(bs)}
	}
	return out
}

// hull returns one box containing all of bs (len(bs) > 0).
func hull(bs []box) box {
	h := bs[0]
	for _, b := range bs[1:] {
		h.pk = h.pk.hull(b.pk)
		h.rk = h.rk.hull(b.rk)
	}
	return h
}

// boxRange returns the range of keys a box covers and its class.
func boxRange(b box) (Range, Class) {
	if b.pk.isPoint() {
		p := b.pk.lo.s
		r := Range{Start: Position{Kind: BeforePartition, PK: p}, End: Position{Kind: AfterPartition, PK: p}}
		switch b.rk.lo.kind {
		case incl:
			r.Start = Position{Kind: BeforeKey, PK: p, RK: b.rk.lo.s}
		case excl:
			r.Start = Position{Kind: AfterKey, PK: p, RK: b.rk.lo.s}
		}
		switch b.rk.hi.kind {
		case incl:
			r.End = Position{Kind: AfterKey, PK: p, RK: b.rk.hi.s}
		case excl:
			r.End = Position{Kind: BeforeKey, PK: p, RK: b.rk.hi.s}
		}
		switch {
		case b.rk.isPoint():
			return r, ClassPoint
		case b.rk.isFull():
			return r, ClassPartition
		}
		return r, ClassRange
	}
	var r Range
	// Within the first (last) partition of an inclusive PartitionKey bound,
	// the RowKey bounds narrow the start (end) further.
	switch p := b.pk.lo.s; b.pk.lo.kind {
	case incl:
		switch b.rk.lo.kind {
		case none:
			r.Start = Position{Kind: BeforePartition, PK: p}
		case incl:
			r.Start = Position{Kind: BeforeKey, PK: p, RK: b.rk.lo.s}
		case excl:
			r.Start = Position{Kind: AfterKey, PK: p, RK: b.rk.lo.s}
		}
	case excl:
		r.Start = Position{Kind: AfterPartition, PK: p}
	}
	switch q := b.pk.hi.s; b.pk.hi.kind {
	case incl:
		switch b.rk.hi.kind {
		case none:
			r.End = Position{Kind: AfterPartition, PK: q}
		case incl:
			r.End = Position{Kind: AfterKey, PK: q, RK: b.rk.hi.s}
		case excl:
			r.End = Position{Kind: BeforeKey, PK: q, RK: b.rk.hi.s}
		}
	case excl:
		r.End = Position{Kind: BeforePartition, PK: q}
	}
	return r, ClassTable
}

func boxesToPlan(bs []box) Plan {
	plan := Plan{Class: ClassPoint}
	ranges := make([]Range, 0, len(bs))
	for _, b := range bs {
		r, c := boxRange(b)
		if comparePositions(r.Start, true, r.End, false) >= 0 {
			continue
		}
		ranges = append(ranges, r)
		plan.Class = max(plan.Class, c)
	}
	slices.SortStableFunc(ranges, func(a, b Range) int {
		if c := comparePositions(a.Start, true, b.Start, true); c != 0 {
			return c
		}
		return comparePositions(a.End, false, b.End, false)
	})
	merged := ranges[:0]
	for _, r := range ranges {
		if n := len(merged); n > 0 && comparePositions(r.Start, true, merged[n-1].End, false) <= 0 {
			if comparePositions(r.End, false, merged[n-1].End, false) > 0 {
				merged[n-1].End = r.End
			}
			continue
		}
		merged = append(merged, r)
	}
	plan.Ranges = merged
	return plan
}

// posKey places a position on a line: (inf, PK, level, RK, after). inf is
// -1 for an Unbounded start and +1 for an Unbounded end. level is 1 for
// positions next to a key (BeforePartition sits where BeforeKey(PK, "")
// does) and 2 for AfterPartition.
type posKey struct {
	inf   int
	pk    string
	level int
	rk    string
	after int
}

func keyOf(p Position, isStart bool) posKey {
	switch p.Kind {
	case BeforePartition:
		return posKey{pk: p.PK, level: 1}
	case AfterPartition:
		return posKey{pk: p.PK, level: 2}
	case BeforeKey:
		return posKey{pk: p.PK, level: 1, rk: p.RK}
	case AfterKey:
		return posKey{pk: p.PK, level: 1, rk: p.RK, after: 1}
	}
	if isStart {
		return posKey{inf: -1}
	}
	return posKey{inf: 1}
}

// comparePositions orders two positions, each used as a range start
// (isStart) or end.
func comparePositions(a Position, aStart bool, b Position, bStart bool) int {
	x, y := keyOf(a, aStart), keyOf(b, bStart)
	if x.inf != y.inf {
		return x.inf - y.inf
	}
	if x.inf != 0 {
		return 0
	}
	if c := edm.CompareStrings(x.pk, y.pk); c != 0 {
		return c
	}
	if x.level != y.level {
		return x.level - y.level
	}
	if c := edm.CompareStrings(x.rk, y.rk); c != 0 {
		return c
	}
	return x.after - y.after
}

// Clip returns p with every range cut to r: a scan of its ranges reads no
// key outside r. A shared access signature's key range is applied so,
// exactly, and not only as a condition of the filter: a long filter's
// plan is coarsened (planWork), its boxes over several partitions to
// their hull, and the hull of "PartitionKey lt 'b' or (PartitionKey gt
// 'a~' and PartitionKey lt 'b0' and RowKey le '1')" holds the whole of
// partition 'b', whose keys a scan would then read, count and name in its
// continuation.
func (p Plan) Clip(r Range) Plan {
	out := Plan{Class: p.Class, Ranges: make([]Range, 0, len(p.Ranges))}
	for _, x := range p.Ranges {
		if comparePositions(r.Start, true, x.Start, true) > 0 {
			x.Start = r.Start
		}
		if comparePositions(r.End, false, x.End, false) < 0 {
			x.End = r.End
		}
		if comparePositions(x.Start, true, x.End, false) < 0 {
			out.Ranges = append(out.Ranges, x)
		}
	}
	return out
}

// before reports whether position p (a start if isStart, else an end) lies
// before the key (pk, rk).
func (p Position) before(pk, rk string, isStart bool) bool {
	return comparePositions(p, isStart, Position{Kind: BeforeKey, PK: pk, RK: rk}, true) <= 0
}

// Contains reports whether the key (pk, rk) lies in r.
func (r Range) Contains(pk, rk string) bool {
	return r.Start.before(pk, rk, true) && !r.End.before(pk, rk, false)
}

// Contains reports whether the key (pk, rk) lies in one of the plan's
// ranges.
func (p Plan) Contains(pk, rk string) bool {
	for _, r := range p.Ranges {
		if r.Contains(pk, rk) {
			return true
		}
	}
	return false
}

// String formats p as unbounded, before('pk'), after('pk'),
// before('pk','rk') or after('pk','rk'), keys quoted as string literals.
func (p Position) String() string {
	var b []byte
	switch p.Kind {
	case Unbounded:
		return "unbounded"
	case BeforePartition, BeforeKey:
		b = append(b, "before("...)
	case AfterPartition, AfterKey:
		b = append(b, "after("...)
	default:
		return "position(" + strconv.Itoa(int(p.Kind)) + ")"
	}
	b = appendQuoted(b, p.PK)
	if p.Kind == BeforeKey || p.Kind == AfterKey {
		b = append(b, ',')
		b = appendQuoted(b, p.RK)
	}
	return string(append(b, ')'))
}

// String formats r as start..end.
func (r Range) String() string { return r.Start.String() + ".." + r.End.String() }

// String formats p as its class, a colon and its ranges separated by ", "
// ("point: before('a','1')..after('a','1')"), or "(none)" for no ranges.
func (p Plan) String() string {
	var sb strings.Builder
	sb.WriteString(p.Class.String())
	sb.WriteString(":")
	if len(p.Ranges) == 0 {
		sb.WriteString(" (none)")
	}
	for i, r := range p.Ranges {
		if i > 0 {
			sb.WriteString(",")
		}
		sb.WriteString(" ")
		sb.WriteString(r.String())
	}
	return sb.String()
}

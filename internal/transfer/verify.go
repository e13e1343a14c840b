package transfer

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
)

// maxDiffsShown bounds the differences printed per table.
const maxDiffsShown = 100

// verify compares every selected table of src and dst entity by entity:
// keys, property names, types and values (Timestamp aside). Each side is
// read whole per table, sorted and merged, so memory grows with the largest
// table.
func verify(ctx context.Context, o Options, src, dst *side) error {
	srcTables, err := tablesOf(ctx, src, o.Tables)
	if err != nil {
		return err
	}
	var dstTables []string
	if dst.remote != nil {
		dstTables, err = tablesOf(ctx, dst, o.Tables)
	} else {
		var files []string
		if files, err = sourceFiles(dst.spec); err != nil {
			return fmt.Errorf("destination%s", strings.TrimPrefix(err.Error(), "source"))
		}
		dst.files = files
		dstTables, err = tablesOf(ctx, dst, o.Tables)
	}
	if err != nil {
		return err
	}
	if m := missingTables(append(slices.Clone(srcTables), dstTables...), o.Tables); m != "" {
		return fmt.Errorf("--tables: neither side has a table %s", m)
	}
	// A table SAS side holds one table under its own name: pair it with
	// the other side's one table.
	if dst.remote != nil && dst.remote.ep.Table != "" {
		if err := dst.oneTable(len(srcTables)); err != nil {
			return err
		}
		dstTables = srcTables
	}
	differ := 0
	inDst := map[string]bool{} // bounded by maxTables
	for _, t := range dstTables {
		inDst[t] = true
	}
	for _, t := range srcTables {
		if !inDst[t] {
			fmt.Fprintf(o.Out, "table %s: missing at the destination\n", t)
			differ++
		}
	}
	inSrc := map[string]bool{}
	for _, t := range srcTables {
		inSrc[t] = true
	}
	for _, t := range dstTables {
		if !inSrc[t] {
			fmt.Fprintf(o.Out, "table %s: only at the destination\n", t)
			differ++
		}
	}
	for _, t := range srcTables {
		if !inDst[t] {
			continue
		}
		a, err := readAll(ctx, src, t, o.Filter)
		if err != nil {
			return err
		}
		b, err := readAll(ctx, dst, dst.tableName(t), o.Filter)
		if err != nil {
			return err
		}
		n := compareTables(o.Out, t, a, b)
		if n > 0 {
			fmt.Fprintf(o.Out, "table %s: %d differences (%d entities at the source, %d at the destination)\n", t, n, len(a), len(b))
		} else {
			fmt.Fprintf(o.Out, "table %s: identical, %d entities\n", t, len(a))
		}
		differ += n
	}
	if differ > 0 {
		return fmt.Errorf("%w: %d differences", ErrDiffer, differ)
	}
	return nil
}

// tablesOf lists the selected tables of a side.
func tablesOf(ctx context.Context, s *side, patterns []string) ([]string, error) {
	if s.remote != nil {
		names, err := s.remote.ListTables(ctx)
		if err != nil {
			return nil, err
		}
		if len(names) > maxTables {
			return nil, fmt.Errorf("%s: more than %d tables; select some with --tables", s.remote.side, maxTables)
		}
		return selectTables(names, patterns)
	}
	seen := map[string]bool{}
	var names []string
	err := eachRecord(s.files, func(f string, rec Record) error {
		if !seen[rec.Table] {
			if len(seen) >= maxTables {
				return fmt.Errorf("%s: more than %d tables", f, maxTables)
			}
			seen[rec.Table] = true
			names = append(names, rec.Table)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return selectTables(names, patterns)
}

// readAll reads every entity of table on a side, sorted by key. A filter
// applies to endpoints only.
func readAll(ctx context.Context, s *side, table, filter string) ([]*partita.Entity, error) {
	var es []*partita.Entity
	if s.remote != nil {
		npk, nrk := "", ""
		var order scanOrder
		for {
			p, err := s.remote.queryPage(ctx, table, filter, npk, nrk, 0, "")
			if err != nil {
				return nil, err
			}
			es = append(es, p.entities...)
			if p.nextPK == "" && p.nextRK == "" {
				break
			}
			if err := order.next(s.remote, table, npk, nrk, p); err != nil {
				return nil, err
			}
			npk, nrk = p.nextPK, p.nextRK
		}
	} else {
		err := eachRecord(s.files, func(_ string, rec Record) error {
			if rec.Table == table {
				es = append(es, rec.Entity)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sortEntities(es)
	return es, nil
}

// eachRecord calls fn with every record of files, in order, and stops at
// the first error, its own or fn's.
func eachRecord(files []string, fn func(file string, rec Record) error) error {
	for _, f := range files {
		lr, err := openLines(f)
		if err != nil {
			return err
		}
		for {
			rec, err := lr.next()
			if err == io.EOF {
				break
			}
			if err == nil {
				err = fn(f, rec)
			}
			if err != nil {
				lr.close()
				return err
			}
		}
		lr.close()
	}
	return nil
}

// compareTables prints the differences of a and b (both sorted) and
// returns their number.
func compareTables(w io.Writer, table string, a, b []*partita.Entity) int {
	n := 0
	report := func(format string, args ...any) {
		n++
		if n <= maxDiffsShown {
			fmt.Fprintf(w, "table %s: "+format+"\n", append([]any{table}, args...)...)
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		var c int
		switch {
		case i == len(a):
			c = 1
		case j == len(b):
			c = -1
		default:
			c = strings.Compare(a[i].PartitionKey, b[j].PartitionKey)
			if c == 0 {
				c = strings.Compare(a[i].RowKey, b[j].RowKey)
			}
		}
		switch {
		case c < 0:
			report("PartitionKey=%q RowKey=%q: only at the source", a[i].PartitionKey, a[i].RowKey)
			i++
		case c > 0:
			report("PartitionKey=%q RowKey=%q: only at the destination", b[j].PartitionKey, b[j].RowKey)
			j++
		default:
			for _, d := range diffEntity(a[i], b[j]) {
				report("PartitionKey=%q RowKey=%q: %s", a[i].PartitionKey, a[i].RowKey, d)
			}
			i++
			j++
		}
	}
	if n > maxDiffsShown {
		fmt.Fprintf(w, "table %s: … %d more differences not shown\n", table, n-maxDiffsShown)
	}
	return n
}

// diffEntity describes how b's properties differ from a's (order aside).
func diffEntity(a, b *partita.Entity) []string {
	var out []string
	for _, p := range a.Properties {
		v, ok := b.Get(p.Name)
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("property %q only at the source", p.Name))
		case !v.Equal(p.Value):
			out = append(out, fmt.Sprintf("property %q: source %s, destination %s", p.Name, showValue(p.Value), showValue(v)))
		}
	}
	for _, p := range b.Properties {
		if _, ok := a.Get(p.Name); !ok {
			out = append(out, fmt.Sprintf("property %q only at the destination", p.Name))
		}
	}
	return out
}

func showValue(v edm.Value) string {
	b := appendValueText(nil, v)
	if len(b) > 80 {
		b = append(b[:77:77], "…\""...)
	}
	return v.Type.String() + " " + string(b)
}

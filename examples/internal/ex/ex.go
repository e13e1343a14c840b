// Package ex holds the few helpers the pattern examples share: connecting to
// the endpoint, a table of the example's own, recording the query class of
// each query, and assertions that stop the program with a clear message.
package ex

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// The development account, the default of partita (and of Azurite).
const (
	DevAccount  = "devstoreaccount1"
	DevKey      = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	DevEndpoint = "http://127.0.0.1:10002/" + DevAccount
)

var endpoint = flag.String("endpoint", envOr("PARTITA_ENDPOINT", DevEndpoint),
	"Table service endpoint of the dev account (env PARTITA_ENDPOINT)")

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// Ctx is the context of every call; the examples are short programs.
var Ctx = context.Background()

// Env is one example's connection: a service client, the credential, and
// the query classes the server reported.
type Env struct {
	Name     string
	Endpoint string
	Cred     *aztables.SharedKeyCredential
	Service  *aztables.ServiceClient
	rec      *recorder
	tables   []string
}

// Start parses the flags and connects. name is the example's name, used
// in messages and in the names of its tables.
func Start(name string) *Env {
	flag.Parse()
	cred, err := aztables.NewSharedKeyCredential(DevAccount, DevKey)
	Must(err, "shared key credential")
	rec := &recorder{}
	svc, err := aztables.NewServiceClientWithSharedKey(*endpoint, cred, Options(rec))
	Must(err, "service client")
	exName = name
	return &Env{Name: name, Endpoint: *endpoint, Cred: cred, Service: svc, rec: rec}
}

// Options are client options with the query-class recorder as a per-call
// policy (nil rec: plain options).
func Options(rec policy.Policy) *aztables.ClientOptions {
	o := &aztables.ClientOptions{}
	if rec != nil {
		o.PerCallPolicies = []policy.Policy{rec}
	}
	return o
}

// Recorder returns the policy that records query classes, for clients the
// example builds itself (for example with a SAS).
func (e *Env) Recorder() policy.Policy { return e.rec }

// NewTable creates a table with a fresh name starting with prefix (letters
// only) and returns its client. Finish deletes it.
func (e *Env) NewTable(prefix string) *aztables.Client {
	c, _ := e.NewTableNamed(prefix)
	return c
}

// NewTableNamed is NewTable that also returns the table's name.
func (e *Env) NewTableNamed(prefix string) (*aztables.Client, string) {
	b := make([]byte, 4)
	rand.Read(b)
	name := prefix + hex.EncodeToString(b)
	_, err := e.Service.CreateTable(Ctx, name, nil)
	Must(err, "create table "+name)
	e.tables = append(e.tables, name)
	return e.Service.NewClient(name), name
}

// Classes returns the query classes reported since the last call, in order.
func (e *Env) Classes() []string { return e.rec.take() }

// Finish deletes the example's tables and prints the query classes seen
// over the whole run, which the e2e test puts into docs/PATTERNS.md.
func (e *Env) Finish() {
	for _, t := range e.tables {
		if _, err := e.Service.DeleteTable(Ctx, t, nil); err != nil && !IsCode(err, "ResourceNotFound") && !IsCode(err, "TableBeingDeleted") {
			Fail("delete table %s: %v", t, err)
		}
	}
	fmt.Printf("query classes: %s\n", strings.Join(e.rec.distinct(), ","))
	fmt.Printf("ok %s\n", e.Name)
}

type recorder struct {
	mu   sync.Mutex
	seen []string // since the last take
	all  []string // distinct, in order of first appearance
}

func (r *recorder) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if err == nil {
		if c := resp.Header.Get("x-partita-query-class"); c != "" {
			r.mu.Lock()
			r.seen = append(r.seen, c)
			if !slices.Contains(r.all, c) {
				r.all = append(r.all, c)
			}
			r.mu.Unlock()
		}
	}
	return resp, err
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.seen
	r.seen = nil
	return s
}

func (r *recorder) distinct() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.all)
}

// Entity is a decoded entity: property name to JSON value (numbers as
// float64, annotated types as their strings), plus the odata annotations.
type Entity map[string]any

// Str returns property k as a string ("" when absent).
func (e Entity) Str(k string) string { s, _ := e[k].(string); return s }

// Num returns property k as a number (0 when absent).
func (e Entity) Num(k string) float64 { f, _ := e[k].(float64); return f }

// Query runs a query to its end, following continuation tokens, and returns
// every entity and the number of pages.
func Query(c *aztables.Client, o *aztables.ListEntitiesOptions) (rows []Entity, pages int) {
	p := c.NewListEntitiesPager(o)
	for p.More() {
		page, err := p.NextPage(Ctx)
		Must(err, "query page")
		pages++
		for _, raw := range page.Entities {
			var e Entity
			Must(json.Unmarshal(raw, &e), "decode entity")
			rows = append(rows, e)
		}
	}
	return rows, pages
}

// Filter returns options with only a filter.
func Filter(f string) *aztables.ListEntitiesOptions { return &aztables.ListEntitiesOptions{Filter: &f} }

// Add inserts an entity given as a map (or any JSON-marshalable value).
func Add(c *aztables.Client, v any) {
	b, err := json.Marshal(v)
	Must(err, "marshal entity")
	_, err = c.AddEntity(Ctx, b, nil)
	Must(err, "add entity")
}

// JSON marshals v, stopping the program if it cannot.
func JSON(v any) []byte {
	b, err := json.Marshal(v)
	Must(err, "marshal")
	return b
}

// IsCode reports whether err is a service error with the given code.
func IsCode(err error, code string) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.ErrorCode == code
}

// Status returns the HTTP status of a service error (0 if err is not one).
func Status(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

var exName = "example"

// Fail prints the failed assertion and exits with status 1.
func Fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "FAIL %s: %s\n", exName, fmt.Sprintf(format, args...))
	os.Exit(1)
}

// Must stops the program when err is not nil.
func Must(err error, what string) {
	if err != nil {
		Fail("%s: %v", what, err)
	}
}

// Check stops the program when cond is false.
func Check(cond bool, format string, args ...any) {
	if !cond {
		Fail(format, args...)
	}
}

// Equal stops the program when got != want.
func Equal[T comparable](got, want T, what string) {
	if got != want {
		Fail("%s: got %v, want %v", what, got, want)
	}
}

// Classes stops the program unless got is exactly want (the query classes
// of the queries just run, in order).
func Classes(got []string, want ...string) {
	if !slices.Equal(got, want) {
		Fail("query classes: got %v, want %v", got, want)
	}
}

// Keys returns the RowKeys of rows, in order.
func Keys(rows []Entity) []string {
	var k []string
	for _, r := range rows {
		k = append(k, r.Str("RowKey"))
	}
	return k
}

// SameKeys stops the program unless the rows have exactly these RowKeys, in
// this order.
func SameKeys(rows []Entity, want ...string) {
	if got := Keys(rows); !slices.Equal(got, want) {
		Fail("RowKeys: got %v, want %v", got, want)
	}
}

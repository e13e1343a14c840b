package httpapi

import (
	"context"
	"net"
	"net/http"
	"net/url"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
	"github.com/partita/partita/internal/auth"
	"github.com/partita/partita/internal/settings"
	"github.com/partita/partita/odata"
)

// authenticate establishes who sent the request: an account key
// (SharedKey, SharedKeyLite) or a shared access signature. For a SAS it
// checks everything that does not depend on the operation; rc.sas then
// carries it for authorize.
func (s *Server) authenticate(r *http.Request, rc *reqCtx, rawPath string, q url.Values, signing string) error {
	if r.Header.Get("Authorization") != "" {
		_, err := s.keys.Verify(auth.Request{Method: r.Method, Header: r.Header, RawPath: rawPath, Query: q}, signing, s.now())
		return err
	}
	sas, ok, err := auth.ParseSAS(q)
	if err != nil {
		return err
	}
	if !ok {
		return auth.ErrNoCredentials
	}
	a := s.keys[rc.account]
	if a == nil {
		return auth.ErrUnknownAccount
	}
	if !sas.VerifySignature(a) {
		return auth.ErrSignatureMismatch
	}
	if sas.Identifier != "" {
		if err := s.applyPolicy(rc.ctx, rc.account, sas); err != nil {
			return err
		}
	}
	if err := sas.CheckTime(s.now()); err != nil {
		return err
	}
	if err := sas.CheckProtocol(r.TLS != nil); err != nil {
		return err
	}
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	if err := sas.CheckIP(net.ParseIP(host)); err != nil {
		return err
	}
	rc.sas = sas
	return nil
}

// applyPolicy fills a SAS from the stored access policy it names;
// removing or changing the policy therefore revokes or changes the SAS
// (within aclCacheTTL on other front ends).
func (s *Server) applyPolicy(ctx context.Context, account string, sas *auth.SAS) error {
	if sas.Kind != auth.ServiceSAS {
		return auth.ErrMalformedSAS
	}
	acl, err := s.aclCache.get(ctx, aclCacheKey(account, sas.Table))
	if err != nil {
		return err
	}
	if acl.missing {
		return auth.ErrPolicyNotFound
	}
	p, err := auth.FindPolicy(acl.policies, sas.Identifier)
	if err != nil {
		return err
	}
	return sas.ApplyPolicy(p)
}

// authorize checks that the request's SAS, if any, allows op on table.
func (rc *reqCtx) authorize(op auth.Operation, table string) error {
	if rc.sas == nil {
		return nil
	}
	return rc.sas.Authorize(op, table)
}

// authorizeKey checks that the request's SAS, if any, covers the entity.
func (rc *reqCtx) authorizeKey(k partita.Key) error {
	if rc.sas == nil || rc.sas.InRange(k.PartitionKey, k.RowKey) {
		return nil
	}
	return auth.ErrSASKeyRange
}

// operationOf maps a write kind to its SAS operation.
func operationOf(k partita.OpKind) auth.Operation {
	switch k {
	case partita.OpInsert:
		return auth.OpInsertEntity
	case partita.OpReplace:
		return auth.OpUpdateEntity
	case partita.OpMerge:
		return auth.OpMergeEntity
	case partita.OpInsertOrReplace:
		return auth.OpInsertOrReplaceEntity
	case partita.OpInsertOrMerge:
		return auth.OpInsertOrMergeEntity
	}
	return auth.OpDeleteEntity
}

// sasRangeFilter is the SAS key range as a filter (docs/COMPATIBILITY.md §10), so a
// query is clipped to it: the planner narrows the scan and evaluation
// drops every entity outside it.
func sasRangeFilter(s *auth.SAS) odata.Expr {
	cmp := func(prop string, op odata.Op, v string) odata.Expr {
		return &odata.Compare{Op: op, Prop: prop, Value: edm.StringValue(v)}
	}
	var e odata.Expr
	and := func(x odata.Expr) {
		if e == nil {
			e = x
		} else {
			e = &odata.And{L: e, R: x}
		}
	}
	const pk, rk = partita.PropPartitionKey, partita.PropRowKey
	switch {
	case s.HasStartPK && s.HasStartRK:
		and(&odata.Or{L: cmp(pk, odata.Gt, s.StartPK), R: &odata.And{L: cmp(pk, odata.Eq, s.StartPK), R: cmp(rk, odata.Ge, s.StartRK)}})
	case s.HasStartPK:
		and(cmp(pk, odata.Ge, s.StartPK))
	}
	switch {
	case s.HasEndPK && s.HasEndRK:
		and(&odata.Or{L: cmp(pk, odata.Lt, s.EndPK), R: &odata.And{L: cmp(pk, odata.Eq, s.EndPK), R: cmp(rk, odata.Le, s.EndRK)}})
	case s.HasEndPK:
		and(cmp(pk, odata.Le, s.EndPK))
	}
	return e
}

// sasRange is the key range of s as scan bounds (PROTOCOL §8.5): from
// (spk, srk) or the start of partition spk, to (epk, erk) or the end of
// partition epk, both inclusive; unbounded where the SAS sets no bound.
func sasRange(s *auth.SAS) odata.Range {
	var r odata.Range
	switch {
	case s.HasStartPK && s.HasStartRK:
		r.Start = odata.Position{Kind: odata.BeforeKey, PK: s.StartPK, RK: s.StartRK}
	case s.HasStartPK:
		r.Start = odata.Position{Kind: odata.BeforePartition, PK: s.StartPK}
	}
	switch {
	case s.HasEndPK && s.HasEndRK:
		r.End = odata.Position{Kind: odata.AfterKey, PK: s.EndPK, RK: s.EndRK}
	case s.HasEndPK:
		r.End = odata.Position{Kind: odata.AfterPartition, PK: s.EndPK}
	}
	return r
}

// loadProperties returns an account's service properties (the defaults
// when never set).
func (s *Server) loadProperties(ctx context.Context, account string) (settings.ServiceProperties, error) {
	raw, err := s.store.GetServiceProperties(ctx, account)
	if err != nil || raw == nil {
		return settings.DefaultServiceProperties(), err
	}
	var p settings.ServiceProperties
	if err := p.UnmarshalBinary(raw); err != nil {
		return p, err
	}
	return p, nil
}

package auth

import (
	"errors"
	"net"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

const devAccount = "devstoreaccount1"

func mustDevAccount(t testing.TB) *Account {
	t.Helper()
	kr, err := ParseAccounts(devAccount + ":" + devKey + ":a2V5Mg==")
	if err != nil {
		t.Fatal(err)
	}
	return kr[devAccount]
}

func mustParseSAS(t testing.TB, rawQuery string) *SAS {
	t.Helper()
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		t.Fatal(err)
	}
	s, ok, err := ParseSAS(q)
	if err != nil || !ok {
		t.Fatalf("ParseSAS(%q) = ok %v, %v", rawQuery, ok, err)
	}
	return s
}

// Worked table and account SAS tokens over the dev key (docs/COMPATIBILITY.md §10).
func TestSAS_WorkedExamples(t *testing.T) {
	a := mustDevAccount(t)
	for _, tt := range []struct {
		name, query, toSign, sig string
	}{
		{
			"service",
			"sv=2019-02-02&tn=mytable&sp=raud&st=2024-01-01T00%3A00%3A00Z&se=2024-12-31T00%3A00%3A00Z&spr=https%2Chttp&spk=p1&epk=p9",
			"raud\n2024-01-01T00:00:00Z\n2024-12-31T00:00:00Z\n/table/devstoreaccount1/mytable\n\n\nhttps,http\n2019-02-02\np1\n\np9\n",
			"1HUTKlQ6dm2SSg3ZluGz/22Y5+KOHmN1sJp/sPeJQF4=",
		},
		{
			"account",
			"sv=2019-02-02&ss=t&srt=sco&sp=rwdlacu&se=2024-12-31T00%3A00%3A00Z&spr=https%2Chttp",
			"devstoreaccount1\nrwdlacu\nt\nsco\n\n2024-12-31T00:00:00Z\n\nhttps,http\n2019-02-02\n",
			"LlZEmCtUbmgqPw2cSbXgzabhBcHs3zAPASkGm2nml/k=",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Sign(a.Keys[0], tt.toSign); got != tt.sig {
				t.Fatalf("Sign(vector) = %s, want %s", got, tt.sig)
			}
			s := mustParseSAS(t, tt.query+"&sig="+url.QueryEscape(tt.sig))
			if got := s.StringToSign(devAccount); got != tt.toSign {
				t.Errorf("StringToSign = %q, want %q", got, tt.toSign)
			}
			if !s.VerifySignature(a) {
				t.Error("VerifySignature = false, want true")
			}
			// Any change to a signed field breaks the signature.
			for _, k := range []string{"sv", "sp", "se", "spr"} {
				q := s.Encode()
				q.Set(k, q.Get(k)+"x")
				s2, ok, err := ParseSAS(q)
				if err != nil || !ok {
					continue // the change made it malformed: fine too
				}
				if s2.VerifySignature(a) {
					t.Errorf("VerifySignature with %s changed = true", k)
				}
			}
			// The wrong account name breaks it.
			if s.VerifySignature(&Account{Name: "other", Keys: a.Keys}) {
				t.Error("VerifySignature for another account = true")
			}
		})
	}
}

func TestSAS_VerifySecondKeyAndSpaces(t *testing.T) {
	a := mustDevAccount(t)
	s := mustParseSAS(t, "sv=2019-02-02&tn=t&sp=r&se=2030-01-01&sig=x")
	s.Signature = Sign(a.Keys[1], s.StringToSign(devAccount))
	if !s.VerifySignature(a) {
		t.Error("signature with key 2 does not verify")
	}
	if (&SAS{Kind: ServiceSAS, Signature: s.Signature}).VerifySignature(a) {
		t.Error("another SAS verifies")
	}
	// A '+' sent unencoded arrives as ' '.
	for !strings.Contains(s.Signature, "+") {
		s.Version += "0"
		s.Signature = Sign(a.Keys[0], s.StringToSign(devAccount))
	}
	s.Signature = strings.ReplaceAll(s.Signature, "+", " ")
	if !s.VerifySignature(a) {
		t.Error("signature with ' ' for '+' does not verify")
	}
	if s.VerifySignature(nil) {
		t.Error("VerifySignature(nil) = true")
	}
}

func TestSAS_StringToSignSES(t *testing.T) {
	for _, tt := range []struct{ sv, want string }{
		{"2019-02-02", "acc\nr\nt\no\n\n2030-01-01\n\n\n2019-02-02\n"},
		{"2020-12-06", "acc\nr\nt\no\n\n2030-01-01\n\n\n2020-12-06\nscope1\n"},
		{"2021-06-08", "acc\nr\nt\no\n\n2030-01-01\n\n\n2021-06-08\nscope1\n"},
	} {
		s := mustParseSAS(t, "sv="+tt.sv+"&ss=t&srt=o&sp=r&se=2030-01-01&ses=scope1&sig=x")
		if got := s.StringToSign("acc"); got != tt.want {
			t.Errorf("sv %s: StringToSign = %q, want %q", tt.sv, got, tt.want)
		}
	}
	// A service SAS lowercases the table in the resource, not in tn.
	s := mustParseSAS(t, "sv=2019-02-02&tn=MyTable&sp=r&se=2030-01-01&sig=x")
	if got, want := s.StringToSign("acc"), "r\n\n2030-01-01\n/table/acc/mytable\n\n\n\n2019-02-02\n\n\n\n"; got != want {
		t.Errorf("StringToSign = %q, want %q", got, want)
	}
	if s.Table != "MyTable" {
		t.Errorf("Table = %q", s.Table)
	}
}

// Tokens made by the Go SDK's own signers verify.
func TestSAS_GoSDK(t *testing.T) {
	a := mustDevAccount(t)
	cred, err := aztables.NewSharedKeyCredential(devAccount, devKey)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	expiry := time.Date(2024, 12, 31, 0, 0, 0, 0, time.UTC)
	now := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	verify := func(t *testing.T, rawQuery string) *SAS {
		t.Helper()
		s := mustParseSAS(t, rawQuery)
		if !s.VerifySignature(a) {
			t.Fatalf("SDK token %q does not verify; string to sign %q", rawQuery, s.StringToSign(devAccount))
		}
		return s
	}

	t.Run("service", func(t *testing.T) {
		for _, v := range []aztables.SASSignatureValues{
			{TableName: "mytable", Permissions: "raud", StartTime: start, ExpiryTime: expiry},
			{TableName: "MyTable", Permissions: "r", ExpiryTime: expiry, Protocol: aztables.SASProtocolHTTPS},
			{TableName: "t1", Permissions: "da", ExpiryTime: expiry, Protocol: aztables.SASProtocolHTTPSandHTTP,
				IPRange: aztables.IPRange{Start: net.ParseIP("10.0.0.1"), End: net.ParseIP("10.0.0.9")}},
			{TableName: "t1", Identifier: "readers", Version: "2019-02-02"},
			{TableName: "t1", Permissions: "u", ExpiryTime: expiry, IPRange: aztables.IPRange{Start: net.ParseIP("::1")}},
		} {
			tok, err := v.Sign(cred)
			if err != nil {
				t.Fatal(err)
			}
			s := verify(t, tok)
			if s.Kind != ServiceSAS || !strings.EqualFold(s.Table, v.TableName) {
				t.Errorf("%q: Kind %v Table %q", tok, s.Kind, s.Table)
			}
			if v.Identifier == "" {
				if err := s.CheckTime(now); err != nil {
					t.Errorf("%q: CheckTime = %v", tok, err)
				}
			}
		}
	})

	t.Run("service key range", func(t *testing.T) {
		// The SDK signs spk/srk/epk/erk but leaves them out of the query
		// (docs/COMPATIBILITY.md §10), so its token fails as is; with the keys added it
		// verifies.
		v := aztables.SASSignatureValues{TableName: "mytable", Permissions: "r", ExpiryTime: expiry,
			StartPartitionKey: "p1", StartRowKey: "r 1", EndPartitionKey: "p9", EndRowKey: "z'9"}
		tok, err := v.Sign(cred)
		if err != nil {
			t.Fatal(err)
		}
		if s := mustParseSAS(t, tok); s.VerifySignature(a) || s.HasKeyRange() {
			t.Fatalf("SDK ranged token verifies without its keys (HasKeyRange %v): the SDK bug is fixed?", s.HasKeyRange())
		}
		q, _ := url.ParseQuery(tok)
		q.Set("spk", "p1")
		q.Set("srk", "r 1")
		q.Set("epk", "p9")
		q.Set("erk", "z'9")
		s := verify(t, q.Encode())
		if !s.InRange("p1", "r 1") || s.InRange("p1", "r 0") || !s.InRange("p9", "z'9") || s.InRange("p9", "z'9a") {
			t.Error("InRange wrong for the SDK's range")
		}
	})

	t.Run("GetTableSASURL", func(t *testing.T) {
		c, err := aztables.NewClientWithSharedKey("https://"+devAccount+".table.core.windows.net/mytable", cred, nil)
		if err != nil {
			t.Fatal(err)
		}
		u, err := c.GetTableSASURL(aztables.SASPermissions{Read: true, Add: true}, start, expiry)
		if err != nil {
			t.Fatal(err)
		}
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		s := verify(t, pu.RawQuery)
		if err := s.Authorize(OpInsertEntity, "MyTable"); err != nil {
			t.Errorf("Authorize(insert) = %v", err)
		}
	})

	t.Run("account", func(t *testing.T) {
		for _, v := range []aztables.AccountSASSignatureValues{
			{Permissions: "rwdlacu", Services: "t", ResourceTypes: "sco", ExpiryTime: expiry},
			{Permissions: "rl", Services: "bt", ResourceTypes: "c", StartTime: start, ExpiryTime: expiry,
				Protocol: aztables.SASProtocolHTTPS, IPRange: aztables.IPRange{Start: net.ParseIP("127.0.0.1")}},
			{Permissions: "r", Services: "t", ResourceTypes: "o", ExpiryTime: expiry, Version: "2019-12-12"},
		} {
			qp, err := v.Sign(cred)
			if err != nil {
				t.Fatal(err)
			}
			s := verify(t, qp.Encode())
			if s.Kind != AccountSAS {
				t.Errorf("Kind = %v", s.Kind)
			}
		}
	})

	t.Run("GetAccountSASURL", func(t *testing.T) {
		svc, err := aztables.NewServiceClientWithSharedKey("https://"+devAccount+".table.core.windows.net", cred, nil)
		if err != nil {
			t.Fatal(err)
		}
		u, err := svc.GetAccountSASURL(aztables.AccountSASResourceTypes{Container: true, Object: true},
			aztables.AccountSASPermissions{Read: true, List: true, Create: true}, start, expiry)
		if err != nil {
			t.Fatal(err)
		}
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		s := verify(t, pu.RawQuery)
		// GetAccountSASURL always signs spr=https.
		if err := s.CheckProtocol(false); !errors.Is(err, ErrSASProtocol) {
			t.Errorf("CheckProtocol(http) = %v, want ErrSASProtocol", err)
		}
		if err := s.Authorize(OpCreateTable, ""); err != nil {
			t.Errorf("Authorize(create table) = %v", err)
		}
	})
}

func TestParseSAS(t *testing.T) {
	for _, tt := range []struct {
		query string
		ok    bool
		err   error
	}{
		{"", false, nil},
		{"sv=2019-02-02&tn=t&sp=r&se=2030-01-01", false, nil}, // no sig
		{"sig=", true, ErrMalformedSAS},
		{"sv=2019-02-02&tn=t&sp=r&se=2030-01-01&sig=x", true, nil},
		{"tn=t&sp=r&se=2030-01-01&sig=x", true, ErrMalformedSAS}, // no sv
		{"sv=2015-04-05&tn=t&sp=r&se=2030-01-01&sig=x", true, nil},
		{"sv=2099-12-31&tn=t&sp=r&se=2030-01-01&sig=x", true, nil},
		{"sv=2015-02-21&tn=t&sp=r&se=2030-01-01&sig=x", true, ErrMalformedSAS},       // signs another string
		{"sv=2012-02-12&ss=t&srt=o&sp=r&se=2030-01-01&sig=x", true, ErrMalformedSAS}, // likewise
		{"sv=garbage&tn=t&sp=r&se=2030-01-01&sig=x", true, ErrMalformedSAS},
		{"sv=2019-2-02&tn=t&sp=r&se=2030-01-01&sig=x", true, ErrMalformedSAS},
		{"sv=9999-99-99x&tn=t&sp=r&se=2030-01-01&sig=x", true, ErrMalformedSAS},
		{"sv=2019-02-02&sp=r&se=2030-01-01&sig=x", true, ErrMalformedSAS},     // no tn
		{"sv=2019-02-02&tn=t&se=2030-01-01&sig=x", true, ErrMalformedSAS},     // no sp
		{"sv=2019-02-02&tn=t&sp=r&sig=x", true, ErrMalformedSAS},              // no se
		{"sv=2019-02-02&tn=t&si=p&sig=x", true, nil},                          // the policy may supply sp and se
		{"sv=2019-02-02&tn=t&sp=r&se=2030-01-01&sig=", true, ErrMalformedSAS}, // empty sig
		{"sv=2019-02-02&tn=t&sp=r&se=tomorrow&sig=x", true, ErrMalformedSAS},  // bad se
		{"sv=2019-02-02&tn=t&sp=r&se=2030-01-01&st=2030-13-01&sig=x", true, ErrMalformedSAS},
		{"sv=2019-02-02&tn=t&sp=r&se=2030-01-01T10:00Z&sig=x", true, nil},
		{"sv=2019-02-02&tn=t&sp=r&se=2030-01-01T10:00:00.1234567Z&sig=x", true, nil},
		{"sv=2019-02-02&tn=t&sp=r&se=2030-01-01T10:00:00%2B02:00&sig=x", true, nil},
		{"sv=2019-02-02&tn=t&sp=r&se=2030-01-01&srk=a&sig=x", true, ErrMalformedSAS}, // srk without spk
		{"sv=2019-02-02&tn=t&sp=r&se=2030-01-01&erk=a&sig=x", true, ErrMalformedSAS}, // erk without epk
		{"sv=2019-02-02&tn=t&sp=r&se=2030-01-01&spk=a&srk=b&epk=c&erk=d&sig=x", true, nil},
		{"sv=2019-02-02&tn=t&sp=r&se=2030-01-01&sip=1.2.3.4&sig=x", true, nil},
		{"sv=2019-02-02&tn=t&sp=r&se=2030-01-01&sip=1.2.3.4-1.2.3.9&sig=x", true, nil},
		{"sv=2019-02-02&tn=t&sp=r&se=2030-01-01&sip=::1&sig=x", true, nil},
		{"sv=2019-02-02&tn=t&sp=r&se=2030-01-01&sip=::1-::2&sig=x", true, ErrMalformedSAS},
		{"sv=2019-02-02&tn=t&sp=r&se=2030-01-01&sip=1.2.3&sig=x", true, ErrMalformedSAS},
		{"sv=2019-02-02&tn=t&sp=r&se=2030-01-01&spr=http&sig=x", true, ErrMalformedSAS},
		{"sv=2019-02-02&tn=t&sp=r&se=2030-01-01&spr=https&sig=x", true, nil},
		{"sv=2019-02-02&ss=t&srt=o&sp=r&se=2030-01-01&sig=x", true, nil},
		{"sv=2019-02-02&ss=t&sp=r&se=2030-01-01&sig=x", true, ErrMalformedSAS},      // ss without srt
		{"sv=2019-02-02&srt=o&sp=r&se=2030-01-01&sig=x", true, ErrMalformedSAS},     // srt without ss
		{"sv=2019-02-02&ss=t&srt=o&se=2030-01-01&sig=x", true, ErrMalformedSAS},     // no sp
		{"sv=2019-02-02&ss=t&srt=o&sp=r&sig=x", true, ErrMalformedSAS},              // no se
		{"sv=2019-02-02&ss=t&srt=o&sp=r&si=p&sig=x", true, ErrMalformedSAS},         // si does not replace se in an account SAS
		{"sv=2019-02-02&ss=t&srt=o&sp=r&se=2030-01-01&tn=t&spk=x&sig=x", true, nil}, // service-only fields ignored
	} {
		q, err := url.ParseQuery(tt.query)
		if err != nil {
			t.Fatal(err)
		}
		s, ok, err := ParseSAS(q)
		if ok != tt.ok || !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
			t.Errorf("ParseSAS(%q) = ok %v, %v; want ok %v, %v", tt.query, ok, err, tt.ok, tt.err)
			continue
		}
		if ok && err == nil && s.Kind == AccountSAS && (s.Table != "" || s.HasKeyRange()) {
			t.Errorf("ParseSAS(%q): account SAS has service fields %+v", tt.query, s)
		}
	}
}

func TestParseSAS_Fields(t *testing.T) {
	s := mustParseSAS(t, "sv=2019-02-02&tn=T1&sp=ra&st=2024-01-01&se=2024-02-01T10%3A00%3A00%2B01%3A00&sip=1.2.3.4&spr=https&si=p1&spk=a&srk=b&epk=c&erk=&sig=abc%2B%2F%3D")
	want := &SAS{
		Kind: ServiceSAS, Version: "2019-02-02", Table: "T1", Permissions: "ra",
		Start: "2024-01-01", Expiry: "2024-02-01T10:00:00+01:00",
		StartTime:  time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
		ExpiryTime: time.Date(2024, 2, 1, 9, 0, 0, 0, time.UTC),
		IP:         "1.2.3.4", Protocol: "https", Identifier: "p1",
		StartPK: "a", StartRK: "b", EndPK: "c", HasStartPK: true, HasStartRK: true, HasEndPK: true,
		Signature: "abc+/=",
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("ParseSAS =\n%+v\nwant\n%+v", s, want)
	}
}

func TestSAS_Authorize(t *testing.T) {
	svc := func(sp string) *SAS { return &SAS{Kind: ServiceSAS, Table: "MyTable", Permissions: sp} }
	acct := func(ss, srt, sp string) *SAS {
		return &SAS{Kind: AccountSAS, Services: ss, ResourceTypes: srt, Permissions: sp}
	}
	for _, tt := range []struct {
		name  string
		s     *SAS
		op    Operation
		table string
		want  error
	}{
		// Service SAS: entity operations on its table, letters r a u d.
		{"svc query r", svc("r"), OpQueryEntities, "mytable", nil},
		{"svc get r", svc("r"), OpGetEntity, "MYTABLE", nil},
		{"svc query a", svc("aud"), OpQueryEntities, "mytable", ErrSASPermission},
		{"svc insert a", svc("a"), OpInsertEntity, "mytable", nil},
		{"svc insert r", svc("rud"), OpInsertEntity, "mytable", ErrSASPermission},
		{"svc update u", svc("u"), OpUpdateEntity, "mytable", nil},
		{"svc merge u", svc("u"), OpMergeEntity, "mytable", nil},
		{"svc merge a", svc("ard"), OpMergeEntity, "mytable", ErrSASPermission},
		{"svc delete d", svc("d"), OpDeleteEntity, "mytable", nil},
		{"svc delete r", svc("rau"), OpDeleteEntity, "mytable", ErrSASPermission},
		{"svc upsert au", svc("au"), OpInsertOrReplaceEntity, "mytable", nil},
		{"svc upsert ua", svc("ua"), OpInsertOrMergeEntity, "mytable", nil},
		{"svc upsert a", svc("a"), OpInsertOrReplaceEntity, "mytable", ErrSASPermission},
		{"svc upsert u", svc("u"), OpInsertOrMergeEntity, "mytable", ErrSASPermission},
		{"svc other table", svc("raud"), OpGetEntity, "other", ErrSASTable},
		// Table names fold in ASCII only: the Kelvin sign is not "k".
		{"svc kelvin", &SAS{Kind: ServiceSAS, Table: "kay", Permissions: "r"}, OpGetEntity, "\u212Aay", ErrSASTable},
		{"svc kelvin tn", &SAS{Kind: ServiceSAS, Table: "\u212Aay", Permissions: "r"}, OpGetEntity, "kay", ErrSASTable},
		{"svc query tables", svc("raud"), OpQueryTables, "", ErrSASOperation},
		{"svc create table", svc("raud"), OpCreateTable, "mytable", ErrSASOperation},
		{"svc delete table", svc("raud"), OpDeleteTable, "mytable", ErrSASOperation},
		{"svc get acl", svc("raud"), OpGetTableACL, "mytable", ErrSASOperation},
		{"svc set acl", svc("raud"), OpSetTableACL, "mytable", ErrSASOperation},
		{"svc service props", svc("raud"), OpGetServiceProperties, "", ErrSASOperation},
		{"svc stats", svc("raud"), OpGetServiceStats, "", ErrSASOperation},
		{"svc unknown op", svc("raud"), Operation(200), "mytable", ErrSASOperation},
		{"svc zero op", svc("raud"), 0, "mytable", ErrSASOperation},

		// Account SAS: ss, srt and the §8.6 letters.
		{"acct no t", acct("bq", "sco", "rwdlacu"), OpQueryEntities, "t", ErrSASService},
		{"acct get props", acct("t", "s", "r"), OpGetServiceProperties, "", nil},
		{"acct get props srt", acct("t", "co", "rwdlacu"), OpGetServiceProperties, "", ErrSASResourceType},
		{"acct get props w", acct("t", "s", "w"), OpGetServiceProperties, "", ErrSASPermission},
		{"acct set props", acct("t", "s", "w"), OpSetServiceProperties, "", nil},
		{"acct set props r", acct("t", "s", "r"), OpSetServiceProperties, "", ErrSASPermission},
		{"acct stats", acct("t", "s", "r"), OpGetServiceStats, "", nil},
		{"acct query tables", acct("t", "c", "l"), OpQueryTables, "", nil},
		{"acct query tables r", acct("t", "c", "r"), OpQueryTables, "", ErrSASPermission},
		{"acct query tables srt", acct("t", "so", "l"), OpQueryTables, "", ErrSASResourceType},
		{"acct create a", acct("t", "c", "a"), OpCreateTable, "t", nil},
		{"acct create c", acct("t", "c", "c"), OpCreateTable, "t", nil},
		{"acct create w", acct("t", "c", "w"), OpCreateTable, "t", nil},
		{"acct create r", acct("t", "c", "rdlu"), OpCreateTable, "t", ErrSASPermission},
		{"acct delete table", acct("t", "c", "d"), OpDeleteTable, "t", nil},
		{"acct delete table srt", acct("t", "o", "d"), OpDeleteTable, "t", ErrSASResourceType},
		{"acct acl", acct("t", "sco", "rwdlacup"), OpGetTableACL, "t", ErrSASOperation},
		{"acct set acl", acct("t", "sco", "rwdlacup"), OpSetTableACL, "t", ErrSASOperation},
		{"acct query entities o", acct("t", "o", "r"), OpQueryEntities, "t", nil},
		{"acct query entities c", acct("t", "c", "r"), OpQueryEntities, "t", ErrSASResourceType},
		{"acct get entity", acct("t", "o", "r"), OpGetEntity, "any", nil},
		{"acct insert", acct("t", "o", "a"), OpInsertEntity, "t", nil},
		{"acct insert w", acct("t", "o", "w"), OpInsertEntity, "t", ErrSASPermission},
		{"acct update", acct("t", "o", "u"), OpUpdateEntity, "t", nil},
		{"acct merge", acct("t", "o", "u"), OpMergeEntity, "t", nil},
		{"acct upsert", acct("t", "o", "au"), OpInsertOrMergeEntity, "t", nil},
		{"acct upsert a", acct("t", "o", "a"), OpInsertOrReplaceEntity, "t", ErrSASPermission},
		{"acct delete", acct("t", "o", "d"), OpDeleteEntity, "t", nil},
		{"acct advisor so r", acct("t", "so", "r"), OpReadAdvisor, "", nil},
		{"acct advisor s r", acct("t", "s", "r"), OpReadAdvisor, "", ErrSASResourceType},
		{"acct advisor o r", acct("t", "o", "r"), OpReadAdvisor, "", ErrSASResourceType},
		{"acct advisor sco l", acct("t", "sco", "l"), OpReadAdvisor, "", ErrSASPermission},
		{"svc advisor", svc("r"), OpReadAdvisor, "mytable", ErrSASOperation},
		{"acct delete srt", acct("t", "sc", "d"), OpDeleteEntity, "t", ErrSASResourceType},
		{"no kind", &SAS{Permissions: "raud"}, OpGetEntity, "t", ErrMalformedSAS},
	} {
		err := tt.s.Authorize(tt.op, tt.table)
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("%s: Authorize(%v, %q) = %v, want %v", tt.name, tt.op, tt.table, err, tt.want)
		}
	}
}

func TestSAS_InRange(t *testing.T) {
	const supp = "\U0001F600" // a supplementary character: UTF-16 D83D DE00
	const priv = "\uE000"     // a BMP character above the surrogates
	r := func(spk, srk, epk, erk *string) *SAS {
		s := &SAS{Kind: ServiceSAS}
		if spk != nil {
			s.StartPK, s.HasStartPK = *spk, true
		}
		if srk != nil {
			s.StartRK, s.HasStartRK = *srk, true
		}
		if epk != nil {
			s.EndPK, s.HasEndPK = *epk, true
		}
		if erk != nil {
			s.EndRK, s.HasEndRK = *erk, true
		}
		return s
	}
	p := func(s string) *string { return &s }
	for _, tt := range []struct {
		name   string
		s      *SAS
		pk, rk string
		want   bool
	}{
		{"no range", r(nil, nil, nil, nil), "", "", true},
		{"spk below", r(p("b"), nil, nil, nil), "a", "zzz", false},
		{"spk equal", r(p("b"), nil, nil, nil), "b", "", true},
		{"spk above", r(p("b"), nil, nil, nil), "ba", "", true},
		{"spk case", r(p("b"), nil, nil, nil), "B", "", false}, // "B" < "b"
		{"spk+srk pk above", r(p("b"), p("m"), nil, nil), "c", "a", true},
		{"spk+srk rk below", r(p("b"), p("m"), nil, nil), "b", "l", false},
		{"spk+srk rk equal", r(p("b"), p("m"), nil, nil), "b", "m", true},
		{"spk+srk rk above", r(p("b"), p("m"), nil, nil), "b", "ma", true},
		{"spk+srk pk below", r(p("b"), p("m"), nil, nil), "a", "z", false},
		{"epk above", r(nil, nil, p("m"), nil), "n", "", false},
		{"epk equal", r(nil, nil, p("m"), nil), "m", "zzz", true},
		{"epk prefix above", r(nil, nil, p("m"), nil), "m0", "", false},
		{"epk below", r(nil, nil, p("m"), nil), "a", "", true},
		{"epk+erk pk below", r(nil, nil, p("m"), p("k")), "l", "z", true},
		{"epk+erk rk equal", r(nil, nil, p("m"), p("k")), "m", "k", true},
		{"epk+erk rk above", r(nil, nil, p("m"), p("k")), "m", "k0", false},
		{"epk+erk rk below", r(nil, nil, p("m"), p("k")), "m", "j", true},
		{"epk+erk pk above", r(nil, nil, p("m"), p("k")), "n", "", false},
		{"both inside", r(p("b"), p("2"), p("d"), p("8")), "c", "", true},
		{"both at start", r(p("b"), p("2"), p("d"), p("8")), "b", "2", true},
		{"both at end", r(p("b"), p("2"), p("d"), p("8")), "d", "8", true},
		{"both past end", r(p("b"), p("2"), p("d"), p("8")), "d", "9", false},
		{"same pk window", r(p("p"), p("2"), p("p"), p("4")), "p", "3", true},
		{"same pk window out", r(p("p"), p("2"), p("p"), p("4")), "p", "5", false},
		{"empty spk", r(p(""), nil, nil, nil), "", "", true},
		// UTF-16 order: the supplementary character sorts before U+E000
		// (byte order would put it after).
		{"utf16 supp below epk", r(nil, nil, p(priv), nil), supp, "", true},
		{"utf16 priv above spk", r(p(supp), nil, nil, nil), priv, "", true},
		{"utf16 priv above epk", r(nil, nil, p(supp), nil), priv, "", false},
		{"utf16 supp below spk", r(p(priv), nil, nil, nil), supp, "", false},
		{"utf16 rk", r(p("p"), p(priv), nil, nil), "p", supp, false},
	} {
		if got := tt.s.InRange(tt.pk, tt.rk); got != tt.want {
			t.Errorf("%s: InRange(%q, %q) = %v, want %v", tt.name, tt.pk, tt.rk, got, tt.want)
		}
	}
	if r(nil, nil, nil, nil).HasKeyRange() || !r(nil, nil, nil, p("")).HasKeyRange() {
		t.Error("HasKeyRange wrong")
	}
}

func TestSAS_CheckTime(t *testing.T) {
	st := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	se := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	s := &SAS{StartTime: st, ExpiryTime: se}
	for _, tt := range []struct {
		now  time.Time
		want error
	}{
		{st.Add(-time.Nanosecond), ErrSASNotYetValid},
		{st, nil},
		{st.Add(time.Hour), nil},
		{se.Add(-time.Nanosecond), nil},
		{se, ErrSASExpired},
		{se.Add(time.Hour), ErrSASExpired},
	} {
		if err := s.CheckTime(tt.now); err != tt.want {
			t.Errorf("CheckTime(%v) = %v, want %v", tt.now, err, tt.want)
		}
	}
	if err := (&SAS{ExpiryTime: se}).CheckTime(st.AddDate(-10, 0, 0)); err != nil {
		t.Errorf("no st: CheckTime = %v", err)
	}
	if err := (&SAS{}).CheckTime(st); !errors.Is(err, ErrMalformedSAS) {
		t.Errorf("no se: CheckTime = %v, want ErrMalformedSAS", err)
	}
}

func TestSAS_CheckProtocol(t *testing.T) {
	for _, tt := range []struct {
		spr   string
		https bool
		want  error
	}{
		{"", false, nil}, {"", true, nil},
		{"https", true, nil}, {"https", false, ErrSASProtocol},
		{"https,http", false, nil}, {"https,http", true, nil},
		{"http,https", false, nil},
	} {
		if err := (&SAS{Protocol: tt.spr}).CheckProtocol(tt.https); err != tt.want {
			t.Errorf("spr %q https %v: CheckProtocol = %v, want %v", tt.spr, tt.https, err, tt.want)
		}
	}
}

func TestSAS_CheckIP(t *testing.T) {
	for _, tt := range []struct {
		sip, remote string
		want        error
	}{
		{"", "1.2.3.4", nil},
		{"", "", nil},
		{"1.2.3.4", "1.2.3.4", nil},
		{"1.2.3.4", "1.2.3.5", ErrSASIP},
		{"1.2.3.4", "::ffff:1.2.3.4", nil}, // IPv4-mapped
		{"1.2.3.4", "::1", ErrSASIP},
		{"1.2.3.4", "", ErrSASIP},
		{"10.0.0.5-10.0.1.5", "10.0.0.5", nil},
		{"10.0.0.5-10.0.1.5", "10.0.0.255", nil},
		{"10.0.0.5-10.0.1.5", "10.0.1.5", nil},
		{"10.0.0.5-10.0.1.5", "10.0.1.6", ErrSASIP},
		{"10.0.0.5-10.0.1.5", "10.0.0.4", ErrSASIP},
		{"10.0.0.5-10.0.1.5", "9.255.255.255", ErrSASIP},
		{"::1", "::1", nil},
		{"::1", "0:0:0:0:0:0:0:1", nil},
		{"::1", "::2", ErrSASIP},
		{"::1", "127.0.0.1", ErrSASIP},
		{"2001:db8::1", "2001:db8::1", nil},
		{"::ffff:1.2.3.4", "1.2.3.4", ErrSASIP}, // an IPv6 sip compares as IPv6
	} {
		err := (&SAS{IP: tt.sip}).CheckIP(net.ParseIP(tt.remote))
		if err != tt.want {
			t.Errorf("sip %q remote %q: CheckIP = %v, want %v", tt.sip, tt.remote, err, tt.want)
		}
	}
	if err := (&SAS{IP: "bogus"}).CheckIP(net.ParseIP("1.2.3.4")); !errors.Is(err, ErrMalformedSAS) {
		t.Errorf("bad sip: CheckIP = %v", err)
	}
}

func TestSAS_ApplyPolicy(t *testing.T) {
	a := mustDevAccount(t)
	policies := []Policy{
		{ID: "full", Start: "2024-01-01T00:00:00.0000000Z", Expiry: "2024-12-31T00:00:00.0000000Z", Permission: "ra"},
		{ID: "perm", Permission: "r"},
		{ID: "times", Start: "2024-01-01T00:00:00.0000000Z", Expiry: "2024-12-31T00:00:00.0000000Z"},
		{ID: "empty"},
		{ID: "badtime", Expiry: "soon", Permission: "r"},
	}
	signed := func(query string) *SAS {
		s := mustParseSAS(t, query+"&sig=x")
		s.Signature = Sign(a.Keys[0], s.StringToSign(devAccount))
		return s
	}
	for _, tt := range []struct {
		name, query, id string
		want            error
		perm            string
		expiry          time.Time
	}{
		{"full", "sv=2019-02-02&tn=t&si=full", "full", nil, "ra", time.Date(2024, 12, 31, 0, 0, 0, 0, time.UTC)},
		{"perm+url se", "sv=2019-02-02&tn=t&si=perm&se=2024-06-01", "perm", nil, "r", time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)},
		{"times+url sp", "sv=2019-02-02&tn=t&si=times&sp=d", "times", nil, "d", time.Date(2024, 12, 31, 0, 0, 0, 0, time.UTC)},
		{"empty+url", "sv=2019-02-02&tn=t&si=empty&sp=u&se=2024-06-01", "empty", nil, "u", time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)},
		{"conflict sp", "sv=2019-02-02&tn=t&si=full&sp=r", "full", ErrPolicyConflict, "", time.Time{}},
		{"conflict se", "sv=2019-02-02&tn=t&si=full&se=2024-06-01", "full", ErrPolicyConflict, "", time.Time{}},
		{"conflict st", "sv=2019-02-02&tn=t&si=times&st=2024-02-01&sp=r", "times", ErrPolicyConflict, "", time.Time{}},
		{"no expiry", "sv=2019-02-02&tn=t&si=perm", "perm", ErrMalformedSAS, "", time.Time{}},
		{"no permission", "sv=2019-02-02&tn=t&si=empty&se=2024-06-01", "empty", ErrMalformedSAS, "", time.Time{}},
		{"bad policy time", "sv=2019-02-02&tn=t&si=badtime", "badtime", ErrMalformedSAS, "", time.Time{}},
		{"not found", "sv=2019-02-02&tn=t&si=nope", "nope", ErrPolicyNotFound, "", time.Time{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := signed(tt.query)
			before := *s
			p, err := FindPolicy(policies, tt.id)
			if err == nil {
				err = s.ApplyPolicy(p)
			}
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("ApplyPolicy = %v, want %v", err, tt.want)
			}
			if err != nil {
				if !reflect.DeepEqual(*s, before) {
					t.Errorf("failed ApplyPolicy changed the SAS: %+v", s)
				}
				return
			}
			if s.Permissions != tt.perm || !s.ExpiryTime.Equal(tt.expiry) {
				t.Errorf("after ApplyPolicy: sp %q se %v, want %q %v", s.Permissions, s.ExpiryTime, tt.perm, tt.expiry)
			}
			if !s.VerifySignature(a) {
				t.Error("signature no longer verifies after ApplyPolicy")
			}
			if got, want := s.Encode().Encode(), before.Encode().Encode(); got != want {
				t.Errorf("Encode after ApplyPolicy = %s, want %s", got, want)
			}
		})
	}
	if err := (&SAS{Kind: ServiceSAS, Identifier: "x"}).ApplyPolicy(nil); !errors.Is(err, ErrPolicyNotFound) {
		t.Errorf("ApplyPolicy(nil) = %v", err)
	}
	if err := (&SAS{Kind: AccountSAS}).ApplyPolicy(&policies[0]); !errors.Is(err, ErrMalformedSAS) {
		t.Errorf("account ApplyPolicy = %v", err)
	}
	// A policy's permission feeds Authorize.
	s := signed("sv=2019-02-02&tn=t&si=perm&se=2030-01-01")
	if err := s.Authorize(OpGetEntity, "t"); !errors.Is(err, ErrSASPermission) {
		t.Errorf("before ApplyPolicy: Authorize = %v", err)
	}
	if err := s.ApplyPolicy(&policies[1]); err != nil {
		t.Fatal(err)
	}
	if err := s.Authorize(OpGetEntity, "t"); err != nil {
		t.Errorf("after ApplyPolicy: Authorize = %v", err)
	}
}

func TestOperation_String(t *testing.T) {
	if OpInsertOrMergeEntity.String() != "InsertOrMergeEntity" || Operation(99).String() != "Operation(99)" {
		t.Error("Operation.String")
	}
	if ServiceSAS.String() != "service" || AccountSAS.String() != "account" || SASKind(0).String() != "SASKind(0)" {
		t.Error("SASKind.String")
	}
}

// FuzzParseSAS: ParseSAS never panics; a parsed SAS encodes (Encode) to a
// query that parses back to an equal SAS with the same string to sign; and
// StringToSign is deterministic.
func FuzzParseSAS(f *testing.F) {
	for _, seed := range []string{
		"sv=2019-02-02&tn=mytable&sp=raud&st=2024-01-01T00%3A00%3A00Z&se=2024-12-31T00%3A00%3A00Z&spr=https%2Chttp&spk=p1&epk=p9&sig=1HUTKlQ6dm2SSg3ZluGz%2F22Y5%2BKOHmN1sJp%2FsPeJQF4%3D",
		"sv=2019-02-02&ss=t&srt=sco&sp=rwdlacu&se=2024-12-31T00%3A00%3A00Z&spr=https%2Chttp&sig=LlZEmCtUbmgqPw2cSbXgzabhBcHs3zAPASkGm2nml%2Fk%3D",
		"sv=2021-06-08&ss=t&srt=o&sp=r&se=2030-01-01&ses=s1&sip=1.2.3.4-1.2.3.9&sig=x",
		"sv=2019-02-02&tn=t&si=p&spk=&srk=&epk=%F0%9F%98%80&erk=%EE%80%80&sip=::1&sig=a+b",
		"sig",
		"sv=2019-02-02&tn=t&sp=r&se=2030-01-01T10:00Z&st=2030-01-01&sig=x&sig=y&tn=u",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		s, ok, err := ParseSAS(q)
		if !ok || err != nil {
			if s != nil {
				t.Fatalf("ParseSAS(%q) = %+v with ok %v, %v", raw, s, ok, err)
			}
			if ok && !errors.Is(err, ErrMalformedSAS) {
				t.Fatalf("ParseSAS(%q) error %v does not wrap ErrMalformedSAS", raw, err)
			}
			return
		}
		enc := s.Encode().Encode()
		q2, err := url.ParseQuery(enc)
		if err != nil {
			t.Fatalf("Encode gave an unparsable query %q: %v", enc, err)
		}
		s2, ok, err := ParseSAS(q2)
		if !ok || err != nil {
			t.Fatalf("ParseSAS(Encode) = ok %v, %v for %q", ok, err, enc)
		}
		if !reflect.DeepEqual(s, s2) {
			t.Fatalf("round trip changed the SAS:\n%+v\n%+v", s, s2)
		}
		sts := s.StringToSign(devAccount)
		if sts != s.StringToSign(devAccount) || sts != s2.StringToSign(devAccount) {
			t.Fatal("StringToSign not deterministic")
		}
		// The pure checks never panic.
		_ = s.CheckTime(time.Now())
		_ = s.CheckIP(net.ParseIP("1.2.3.4"))
		_ = s.CheckProtocol(false)
		_ = s.Authorize(OpGetEntity, s.Table)
		_ = s.InRange(s.StartPK, s.EndRK)
	})
}

// TestParseSAS_EmptyMeansAbsent: a signed parameter sent empty signs
// exactly like one left out, so the two must grant exactly the same access;
// otherwise whoever holds a token with an empty bound could drop it and
// reach what the token did not show.
func TestParseSAS_EmptyMeansAbsent(t *testing.T) {
	const base = "sv=2019-02-02&tn=t1&sp=raud&se=2030-01-01&sig=x"
	keys := [][2]string{{"", ""}, {"", "a"}, {"a", ""}, {"m", ""}, {"m", "x"}, {"z", "z"}}
	for _, tt := range []struct{ with, without string }{
		{"&spk=", ""},
		{"&epk=", ""},
		{"&spk=&srk=", ""},
		{"&epk=&erk=", ""},
		{"&spk=&srk=&epk=&erk=", ""},
		{"&spk=m&srk=", "&spk=m"},
		{"&epk=m&erk=", "&epk=m"},
		{"&st=", ""},
		{"&sip=", ""},
		{"&spr=", ""},
		{"&si=", ""},
	} {
		a, okA, errA := ParseSAS(mustQuery(t, base+tt.with))
		b, okB, errB := ParseSAS(mustQuery(t, base+tt.without))
		if okA != okB || (errA == nil) != (errB == nil) {
			t.Errorf("%q: ParseSAS = %v, %v; without the empty parameters %v, %v", tt.with, okA, errA, okB, errB)
			continue
		}
		if errA != nil {
			continue
		}
		if a.StringToSign(devAccount) != b.StringToSign(devAccount) {
			t.Fatalf("%q: signs unlike %q", tt.with, tt.without)
		}
		if a.HasKeyRange() != b.HasKeyRange() {
			t.Errorf("%q: HasKeyRange %v, without it %v", tt.with, a.HasKeyRange(), b.HasKeyRange())
		}
		for _, k := range keys {
			if got, want := a.InRange(k[0], k[1]), b.InRange(k[0], k[1]); got != want {
				t.Errorf("%q: InRange(%q, %q) = %v, without it %v", tt.with, k[0], k[1], got, want)
			}
		}
		if ea, eb := a.Encode().Encode(), b.Encode().Encode(); ea != eb {
			t.Errorf("%q: Encode = %q, without it %q", tt.with, ea, eb)
		}
	}
}

func mustQuery(t *testing.T, raw string) url.Values {
	t.Helper()
	q, err := url.ParseQuery(raw)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

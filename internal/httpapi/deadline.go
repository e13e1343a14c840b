package httpapi

import (
	"errors"
	"net/url"
	"strconv"
	"time"

	"github.com/partita/partita"
)

// DefaultMaxTimeout is the service's longest server timeout for Table
// operations ("Setting timeouts for Table service operations"): a larger
// `timeout` is reduced to it, and it is the default of insert, update and
// delete operations.
const DefaultMaxTimeout = 30 * time.Second

// errBadTimeout answers a `timeout` that is not a positive whole number of
// seconds. The service's answer is undocumented; this is partita's
// answer to every other bad query parameter (docs/COMPATIBILITY.md §13).
var errBadTimeout = partita.NewError(partita.CodeInvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid.")

// requestTimeout reads the `timeout` query parameter: a positive whole
// number of seconds, reduced to max. Without it, it returns max and
// given=false. A number too large for int64 is still a number, and is
// reduced to max like any other.
func requestTimeout(q url.Values, max time.Duration) (d time.Duration, given bool, err error) {
	vs, ok := q["timeout"]
	if !ok {
		return max, false, nil
	}
	v := vs[0]
	if v == "" {
		return 0, true, errBadTimeout
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, true, errBadTimeout
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, true, errBadTimeout
	}
	if err == nil && n == 0 {
		return 0, true, errBadTimeout
	}
	if err != nil || n > int64(max/time.Second) {
		return max, true, nil
	}
	return time.Duration(n) * time.Second, true, nil
}

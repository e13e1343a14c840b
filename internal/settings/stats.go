package settings

import (
	"net/http"
	"time"
)

// AppendServiceStats appends the body of a Get Service Stats response
// (docs/COMPATIBILITY.md §11): geo-replication status "live" and lastSync in RFC 1123
// ("Tue, 02 Jan 2024 03:00:00 GMT"), or an empty <LastSyncTime /> when
// lastSync is zero. A development server answers on every endpoint with the
// current time, as Azurite does (the real service answers only on the
// -secondary endpoint and gives 400 InvalidQueryParameterValue on the
// primary).
func AppendServiceStats(dst []byte, lastSync time.Time) []byte {
	dst = append(dst, xmlDecl...)
	dst = append(dst, "<StorageServiceStats><GeoReplication><Status>live</Status>"...)
	if lastSync.IsZero() {
		dst = append(dst, "<LastSyncTime />"...)
	} else {
		dst = appendElem(dst, "LastSyncTime", lastSync.UTC().Format(http.TimeFormat))
	}
	return append(dst, "</GeoReplication></StorageServiceStats>"...)
}

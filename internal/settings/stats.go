package settings

import (
	"net/http"
	"time"
)

// AppendServiceStats appends the body of a Get Service Stats response
// (docs/COMPATIBILITY.md §11): geo-replication status "live" and lastSync in RFC 1123
// ("Tue, 02 Jan 2024 03:00:00 GMT"), or an empty <LastSyncTime /> when
// lastSync is zero. partita answers, as the service does, only on the
// -secondary endpoint, with the current time as lastSync; the primary gets
// 400 InvalidQueryParameterValue (internal/httpapi, service.go).
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

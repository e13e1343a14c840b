package wire

import (
	"bytes"
	"encoding/xml"
	"strings"
	"unicode/utf8"

	"github.com/partita/partita/edm"
)

// AppendError appends the odata.error JSON body. The message value is the
// description, the request id and the time with seven fractional digits.
// Messages can quote the request (a header value, a query), which need not
// be UTF-8: invalid bytes become U+FFFD, so the body is always valid JSON.
func AppendError(b []byte, code, message, requestID string, ticks int64) []byte {
	if !utf8.ValidString(message) {
		message = strings.ToValidUTF8(message, "\uFFFD")
	}
	b = append(b, `{"odata.error":{"code":`...)
	b = appendString(b, code)
	b = append(b, `,"message":{"lang":"en-US","value":`...)
	b = appendString(b, message+"\nRequestId:"+requestID+"\nTime:"+edm.FormatDateTime7(ticks))
	return append(b, "}}}"...)
}

// AppendXMLError appends the XML error body used by the XML operations.
func AppendXMLError(b []byte, code, message, requestID string, ticks int64) []byte {
	b = append(b, `<?xml version="1.0" encoding="utf-8"?><m:error xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><m:code>`...)
	b = appendXMLText(b, code)
	b = append(b, `</m:code><m:message xml:lang="en-US">`...)
	b = appendXMLText(b, message)
	b = append(b, "\nRequestId:"+requestID+"\nTime:"+edm.FormatDateTime7(ticks)...)
	return append(b, "</m:message></m:error>"...)
}

// appendXMLText appends s escaped as XML character data (messages can
// quote names from the request).
func appendXMLText(b []byte, s string) []byte {
	buf := bytes.NewBuffer(b)
	xml.EscapeText(buf, []byte(s)) // writes to a bytes.Buffer do not fail
	return buf.Bytes()
}

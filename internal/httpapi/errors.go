package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
	"github.com/partita/partita/internal/auth"
	"github.com/partita/partita/internal/changeset"
	"github.com/partita/partita/internal/wire"
	"github.com/partita/partita/odata"
)

// statusByCode is the only place that maps error codes to HTTP statuses.
var statusByCode = map[partita.Code]int{
	partita.CodeInternal:                                http.StatusInternalServerError,
	partita.CodeServerBusy:                              http.StatusServiceUnavailable,
	partita.CodeOperationTimedOut:                       http.StatusInternalServerError,
	partita.CodeInvalidInput:                            http.StatusBadRequest,
	partita.CodeOutOfRangeInput:                         http.StatusBadRequest,
	partita.CodeInvalidResourceName:                     http.StatusBadRequest,
	partita.CodeInvalidHeaderValue:                      http.StatusBadRequest,
	partita.CodeInvalidQueryParameterValue:              http.StatusBadRequest,
	partita.CodeInvalidValueType:                        http.StatusBadRequest,
	partita.CodeMissingRequiredHeader:                   http.StatusBadRequest,
	partita.CodeTableNotFound:                           http.StatusNotFound,
	partita.CodeTableAlreadyExists:                      http.StatusConflict,
	partita.CodeTableBeingDeleted:                       http.StatusConflict,
	partita.CodeResourceNotFound:                        http.StatusNotFound,
	partita.CodeEntityAlreadyExists:                     http.StatusConflict,
	partita.CodeUpdateConditionNotSatisfied:             http.StatusPreconditionFailed,
	partita.CodeEntityTooLarge:                          http.StatusBadRequest,
	partita.CodePropertyValueTooLarge:                   http.StatusBadRequest,
	partita.CodePropertyNameInvalid:                     http.StatusBadRequest,
	partita.CodePropertyNameTooLong:                     http.StatusBadRequest,
	partita.CodePropertiesNeedValue:                     http.StatusBadRequest,
	partita.CodeDuplicatePropertiesSpecified:            http.StatusBadRequest,
	partita.CodeTooManyProperties:                       http.StatusBadRequest,
	partita.CodeInvalidDuplicateRow:                     http.StatusBadRequest,
	partita.CodeCommandsInBatchActOnDifferentPartitions: http.StatusBadRequest,
	partita.CodeRequestBodyTooLarge:                     http.StatusRequestEntityTooLarge,
	partita.CodeNotImplemented:                          http.StatusNotImplemented,
	partita.CodeMethodNotAllowed:                        http.StatusMethodNotAllowed,
	partita.CodeUnsupportedHTTPVerb:                     http.StatusMethodNotAllowed,
	partita.CodeAtomFormatNotSupported:                  http.StatusUnsupportedMediaType,
	partita.CodeJSONFormatNotSupported:                  http.StatusUnsupportedMediaType,
	partita.CodeXMethodNotUsingPost:                     http.StatusBadRequest,
	partita.CodeXMethodIncorrectValue:                   http.StatusBadRequest,
	partita.CodeXMethodIncorrectCount:                   http.StatusBadRequest,
	partita.CodeAuthenticationFailed:                    http.StatusForbidden,
	partita.CodeInvalidAuthenticationInfo:               http.StatusBadRequest,
	partita.CodeAuthorizationFailure:                    http.StatusForbidden,
	partita.CodeInvalidXMLDocument:                      http.StatusBadRequest,
	partita.CodeAuthorizationPermissionMismatch:         http.StatusForbidden,
	partita.CodeAuthorizationResourceTypeMismatch:       http.StatusForbidden,
	partita.CodeAuthorizationServiceMismatch:            http.StatusForbidden,
	partita.CodeAuthorizationProtocolMismatch:           http.StatusForbidden,
	partita.CodeAuthorizationSourceIPMismatch:           http.StatusForbidden,
	partita.CodeCorsPreflightFailure:                    http.StatusForbidden,
	partita.CodeInsufficientAccountPermissions:          http.StatusForbidden,
}

// classify decides the code and the client-safe message of any error:
// partita's own, odata's, the authentication and SAS failures, an
// oversized body, a deadline. Everything else is an internal error.
func classify(err error) (partita.Code, string) {
	var pe *partita.Error
	var oe *odata.Error
	var mb *http.MaxBytesError
	if code, msg, ok := sasError(err); ok {
		return code, msg
	}
	switch {
	case errors.As(err, &pe):
		return pe.Code, pe.Message
	case errors.As(err, &oe):
		return filterError(oe)
	case errors.As(err, &mb):
		return partita.CodeRequestBodyTooLarge, partita.MsgRequestBodyTooLarge
	case errors.Is(err, auth.ErrMalformed):
		return partita.CodeInvalidAuthenticationInfo, "Authentication information is not given in the correct format. Check the value of Authorization header."
	case errors.Is(err, auth.ErrNoCredentials), errors.Is(err, auth.ErrUnknownAccount),
		errors.Is(err, auth.ErrSignatureMismatch), errors.Is(err, auth.ErrClockSkew):
		return partita.CodeAuthenticationFailed, partita.MsgAuthenticationFailed
	case errors.Is(err, context.DeadlineExceeded):
		return partita.CodeOperationTimedOut, partita.MsgOperationTimedOut
	}
	return partita.CodeInternal, partita.MsgInternal
}

// filterError maps a $filter error to the service's answer: a syntax
// error quotes the filter and the position; a comparison with null is
// plain invalid input; one of two properties or two literals, and a
// function call, are not implemented (501).
func filterError(e *odata.Error) (partita.Code, string) {
	switch e.Kind {
	case odata.ErrSyntax:
		return partita.CodeInvalidInput, e.Message
	case odata.ErrNullComparison:
		return partita.CodeInvalidInput, partita.MsgInvalidInput
	case odata.ErrUnsupportedComparison, odata.ErrUnsupportedFunction:
		return partita.CodeNotImplemented, partita.MsgNotImplemented
	}
	return partita.CodeInternal, partita.MsgInternal
}

// LeaveBodyUnread closes the connection after this response rather than
// let net/http read the rest of an HTTP/1 request's body, which nothing
// will read. The header alone does not do it: net/http still discards up
// to 256 KiB of the body, before writing the response and again after it,
// for as long as its read timeout (2 minutes) allows, holding the
// connection as busy. A read deadline in the past ends that at once.
func LeaveBodyUnread(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	http.NewResponseController(w).SetReadDeadline(time.Now())
}

// sasError maps SAS failures to the service's codes and messages.
func sasError(err error) (partita.Code, string, bool) {
	switch {
	case errors.Is(err, auth.ErrSASProtocol):
		return partita.CodeAuthorizationProtocolMismatch, "This request is not authorized to perform this operation using this protocol.", true
	case errors.Is(err, auth.ErrSASIP):
		return partita.CodeAuthorizationSourceIPMismatch, "This request is not authorized to perform this operation using this source IP.", true
	case errors.Is(err, auth.ErrSASPermission):
		return partita.CodeAuthorizationPermissionMismatch, "This request is not authorized to perform this operation using this permission.", true
	case errors.Is(err, auth.ErrSASResourceType):
		return partita.CodeAuthorizationResourceTypeMismatch, "This request is not authorized to perform this operation using this resource type.", true
	case errors.Is(err, auth.ErrSASService):
		return partita.CodeAuthorizationServiceMismatch, "This request is not authorized to perform this operation using this service.", true
	case errors.Is(err, auth.ErrSASTable), errors.Is(err, auth.ErrSASKeyRange), errors.Is(err, auth.ErrSASOperation):
		return partita.CodeAuthorizationFailure, "This request is not authorized to perform this operation.", true
	case errors.Is(err, auth.ErrMalformedSAS), errors.Is(err, auth.ErrSASExpired), errors.Is(err, auth.ErrSASNotYetValid),
		errors.Is(err, auth.ErrPolicyNotFound), errors.Is(err, auth.ErrPolicyConflict):
		return partita.CodeAuthenticationFailed, partita.MsgAuthenticationFailed, true
	}
	return "", "", false
}

func statusOf(code partita.Code) int {
	if s, ok := statusByCode[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// writeError is the one place request errors become responses, and the
// one place they are logged.
func (s *Server) writeError(w http.ResponseWriter, rc *reqCtx, err error) {
	code, msg := classify(err)
	status := statusOf(code)
	gone := rc.ctx != nil && errors.Is(rc.ctx.Err(), context.Canceled) && errors.Is(err, context.Canceled)
	if gone {
		// The client closed its connection: not the server's failure, and
		// a client doing it on purpose must not fill the log (the
		// PostgreSQL engine's reads fail with it when their request goes).
		s.log.Debug("request abandoned by the client", "op", rc.op, "request_id", rc.id, "err", err)
	} else if code == partita.CodeInternal || (status >= 500 && code != partita.CodeNotImplemented && code != partita.CodeServerBusy) {
		s.log.Error("request failed", "op", rc.op, "request_id", rc.id, "err", err)
	} else {
		s.log.Debug("request rejected", "op", rc.op, "request_id", rc.id, "code", code, "err", err)
	}
	h := w.Header()
	h.Del("Cache-Control")
	if rc.bodyPending {
		LeaveBodyUnread(w) // refused unread, or read in part
	}
	h.Set("x-ms-error-code", string(code))
	if rc.xml {
		h.Set("Content-Type", "application/xml")
		body := wire.AppendXMLError(nil, string(code), msg, rc.id, edm.TicksFromTime(s.now()))
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(status)
		w.Write(body)
		return
	}
	h.Set("Content-Type", rc.meta.ContentType())
	body := s.errorBody(rc, code, msg)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// errorBody is the JSON error body of a response to rc.
func (s *Server) errorBody(rc *reqCtx, code partita.Code, msg string) []byte {
	return wire.AppendError(nil, string(code), msg, rc.id, edm.TicksFromTime(s.now()))
}

// subError is the part of a batch response that answers a failed
// sub-request: the status of code and its JSON error body.
func (s *Server) subError(rc *reqCtx, code partita.Code, msg string, meta wire.Metadata) changeset.Response {
	return changeset.Response{
		Status: statusOf(code),
		Header: []changeset.HeaderField{
			{Name: "X-Content-Type-Options", Value: "nosniff"},
			{Name: "DataServiceVersion", Value: "3.0;"},
			{Name: "Content-Type", Value: meta.ContentType()},
		},
		Body: s.errorBody(rc, code, msg),
	}
}

// orDefault returns l, or slog.Default() when l is nil (Options.Logger
// is optional).
func orDefault(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
}

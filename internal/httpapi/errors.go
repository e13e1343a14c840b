package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
	"github.com/partita/partita/internal/auth"
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

// classify decides the code and the client-safe message of any error.
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
		return partita.Code(oe.Code), oe.Message
	case errors.As(err, &mb):
		return partita.CodeRequestBodyTooLarge, partita.MsgRequestBodyTooLarge
	case errors.Is(err, auth.ErrMalformed):
		return partita.CodeInvalidAuthenticationInfo, "Authentication information is not given in the correct format. Check the value of Authorization header."
	case errors.Is(err, auth.ErrNoCredentials), errors.Is(err, auth.ErrUnknownAccount),
		errors.Is(err, auth.ErrSignatureMismatch), errors.Is(err, auth.ErrClockSkew):
		return partita.CodeAuthenticationFailed, partita.MsgAuthenticationFailed
	case errors.Is(err, context.DeadlineExceeded):
		return partita.CodeOperationTimedOut, "Operation could not be completed within the specified time."
	}
	return partita.CodeInternal, partita.MsgInternal
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
	if code == partita.CodeInternal || (status >= 500 && code != partita.CodeNotImplemented && code != partita.CodeServerBusy) {
		s.log.Error("request failed", "op", rc.op, "request_id", rc.id, "err", err)
	} else {
		s.log.Debug("request rejected", "op", rc.op, "request_id", rc.id, "code", code, "err", err)
	}
	h := w.Header()
	h.Del("Cache-Control")
	if rc.bodyPending {
		// The body was refused unread (or read in part): close the
		// connection rather than let net/http read the rest of it.
		h.Set("Connection", "close")
	}
	h.Set("x-ms-error-code", string(code))
	ticks := edm.TicksFromTime(s.now())
	if rc.xml {
		h.Set("Content-Type", "application/xml")
		body := wire.AppendXMLError(nil, string(code), msg, rc.id, ticks)
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(status)
		w.Write(body)
		return
	}
	h.Set("Content-Type", rc.meta.ContentType())
	body := wire.AppendError(nil, string(code), msg, rc.id, ticks)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// logger is a tiny indirection so tests can pass nil.
func orDefault(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
}

package partita

import (
	"errors"
	"fmt"
)

// Code is an Azure Table storage error code such as "EntityAlreadyExists".
// Codes say what went wrong; the HTTP layer chooses the status.
type Code string

// The error codes partita returns. Their strings are the service's.
const (
	CodeInternal                                Code = "InternalError"
	CodeServerBusy                              Code = "ServerBusy"
	CodeOperationTimedOut                       Code = "OperationTimedOut"
	CodeInvalidInput                            Code = "InvalidInput"
	CodeOutOfRangeInput                         Code = "OutOfRangeInput"
	CodeInvalidResourceName                     Code = "InvalidResourceName"
	CodeInvalidHeaderValue                      Code = "InvalidHeaderValue"
	CodeInvalidQueryParameterValue              Code = "InvalidQueryParameterValue"
	CodeInvalidValueType                        Code = "InvalidValueType"
	CodeMissingRequiredHeader                   Code = "MissingRequiredHeader"
	CodeTableNotFound                           Code = "TableNotFound"
	CodeTableAlreadyExists                      Code = "TableAlreadyExists"
	CodeTableBeingDeleted                       Code = "TableBeingDeleted"
	CodeResourceNotFound                        Code = "ResourceNotFound"
	CodeEntityAlreadyExists                     Code = "EntityAlreadyExists"
	CodeUpdateConditionNotSatisfied             Code = "UpdateConditionNotSatisfied"
	CodeEntityTooLarge                          Code = "EntityTooLarge"
	CodePropertyValueTooLarge                   Code = "PropertyValueTooLarge"
	CodePropertyNameInvalid                     Code = "PropertyNameInvalid"
	CodePropertyNameTooLong                     Code = "PropertyNameTooLong"
	CodePropertiesNeedValue                     Code = "PropertiesNeedValue"
	CodeDuplicatePropertiesSpecified            Code = "DuplicatePropertiesSpecified"
	CodeTooManyProperties                       Code = "TooManyProperties"
	CodeInvalidDuplicateRow                     Code = "InvalidDuplicateRow"
	CodeCommandsInBatchActOnDifferentPartitions Code = "CommandsInBatchActOnDifferentPartitions"
	CodeRequestBodyTooLarge                     Code = "RequestBodyTooLarge"
	CodeNotImplemented                          Code = "NotImplemented"
	CodeMethodNotAllowed                        Code = "MethodNotAllowed"
	CodeUnsupportedHTTPVerb                     Code = "UnsupportedHttpVerb"
	CodeAtomFormatNotSupported                  Code = "AtomFormatNotSupported"
	CodeJSONFormatNotSupported                  Code = "JsonFormatNotSupported"
	CodeXMethodNotUsingPost                     Code = "XMethodNotUsingPost"
	CodeXMethodIncorrectValue                   Code = "XMethodIncorrectValue"
	CodeXMethodIncorrectCount                   Code = "XMethodIncorrectCount"
	CodeAuthenticationFailed                    Code = "AuthenticationFailed"
	CodeInvalidAuthenticationInfo               Code = "InvalidAuthenticationInfo"
	CodeAuthorizationFailure                    Code = "AuthorizationFailure"
	CodeAuthorizationPermissionMismatch         Code = "AuthorizationPermissionMismatch"
	CodeAuthorizationResourceTypeMismatch       Code = "AuthorizationResourceTypeMismatch"
	CodeAuthorizationServiceMismatch            Code = "AuthorizationServiceMismatch"
	CodeAuthorizationProtocolMismatch           Code = "AuthorizationProtocolMismatch"
	CodeAuthorizationSourceIPMismatch           Code = "AuthorizationSourceIPMismatch"
	CodeCorsPreflightFailure                    Code = "CorsPreflightFailure"
	CodeInvalidXMLDocument                      Code = "InvalidXmlDocument"
	CodeInsufficientAccountPermissions          Code = "InsufficientAccountPermissions"
)

// Codes lists every Code, so tests can check that each has an HTTP status.
var Codes = []Code{
	CodeInternal, CodeServerBusy, CodeOperationTimedOut, CodeInvalidInput, CodeOutOfRangeInput,
	CodeInvalidResourceName, CodeInvalidHeaderValue, CodeInvalidQueryParameterValue, CodeInvalidValueType,
	CodeMissingRequiredHeader, CodeTableNotFound, CodeTableAlreadyExists, CodeTableBeingDeleted,
	CodeResourceNotFound, CodeEntityAlreadyExists, CodeUpdateConditionNotSatisfied, CodeEntityTooLarge,
	CodePropertyValueTooLarge, CodePropertyNameInvalid, CodePropertyNameTooLong, CodePropertiesNeedValue,
	CodeDuplicatePropertiesSpecified, CodeTooManyProperties, CodeInvalidDuplicateRow,
	CodeCommandsInBatchActOnDifferentPartitions, CodeRequestBodyTooLarge, CodeNotImplemented,
	CodeMethodNotAllowed, CodeUnsupportedHTTPVerb, CodeAtomFormatNotSupported, CodeJSONFormatNotSupported,
	CodeXMethodNotUsingPost, CodeXMethodIncorrectValue, CodeXMethodIncorrectCount,
	CodeAuthenticationFailed, CodeInvalidAuthenticationInfo, CodeAuthorizationFailure, CodeInvalidXMLDocument,
	CodeAuthorizationPermissionMismatch, CodeAuthorizationResourceTypeMismatch, CodeAuthorizationServiceMismatch,
	CodeAuthorizationProtocolMismatch, CodeAuthorizationSourceIPMismatch, CodeCorsPreflightFailure,
	CodeInsufficientAccountPermissions,
}

// The service's standard messages for the codes that have one.
const (
	MsgInvalidInput          = "One of the request inputs is not valid."
	MsgOutOfRangeInput       = "One of the request inputs is out of range."
	MsgResourceNotFound      = "The specified resource does not exist."
	MsgTableNotFound         = "The table specified does not exist."
	MsgTableAlreadyExists    = "The table specified already exists."
	MsgTableBeingDeleted     = "The specified table is being deleted. Try operation later."
	MsgEntityAlreadyExists   = "The specified entity already exists."
	MsgUpdateCondition       = "The update condition specified in the request was not satisfied."
	MsgPropertyValueTooLarge = "The property value exceeds the maximum allowed size (64KB). If the property value is a string, it is UTF-16 encoded and the maximum number of characters should be 32K or less."
	MsgEntityTooLarge        = "The entity is larger than the maximum allowed size (1MB)."
	MsgPropertiesNeedValue   = "The values are not specified for all properties in the entity."
	MsgTooManyProperties     = "The entity contains more properties than allowed."
	MsgPropertyNameInvalid   = "The property name is invalid."
	MsgPropertyNameTooLong   = "The property name exceeds the maximum allowed length."
	MsgDuplicateProperties   = "A property is specified more than one time."
	MsgInvalidResourceName   = "The specifed resource name contains invalid characters."
	MsgResourceNameLength    = "The specified resource name length is not within the permissible limits."
	MsgNotImplemented        = "The requested operation is not implemented on the specified resource."
	MsgInternal              = "Server encountered an internal error. Please try again after some time."
	MsgServerBusy            = "The server is currently unable to receive requests. Please retry your request."
	MsgOperationTimedOut     = "Operation could not be completed within the specified time."
	MsgAuthenticationFailed  = "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature."
	MsgRequestBodyTooLarge   = "The request body is too large and exceeds the maximum permissible limit."
	MsgWriteNotAllowed       = "Write operations are not allowed."
	MsgDifferentPartitions   = "All commands in a batch must operate on same entity group."
	MsgDuplicateRow          = "The batch request contains multiple changes with same row key. An entity can appear only once in a batch request."
)

// Error is an error a client may see. Message must be safe to send; Err is
// the cause, logged but never sent.
type Error struct {
	Code    Code
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// NewError returns an *Error with a fixed message.
func NewError(code Code, msg string) *Error { return &Error{Code: code, Message: msg} }

// ErrorCode returns the Code of the first *Error in err's chain, or
// CodeInternal if there is none. ErrorCode(nil) is "".
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// BatchError reports the operation of an entity group transaction that
// failed, by its zero-based index in the changeset.
type BatchError struct {
	Index int
	Err   error
}

func (e *BatchError) Error() string { return fmt.Sprintf("operation %d: %v", e.Index, e.Err) }
func (e *BatchError) Unwrap() error { return e.Err }

package httpapi

import (
	"net/http"

	"github.com/partita/partita"
)

func (s *Server) handleBatch(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	return partita.NewError(partita.CodeNotImplemented, partita.MsgNotImplemented)
}

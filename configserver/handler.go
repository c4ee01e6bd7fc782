package configserver

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Paths of the API.
const (
	pathFetch   = "/fetch_sql_proxy_list"
	pathReload  = "/reload"
	pathMonitor = "/monitor"
	pathHealth  = "/health/"
	pathStatus  = "/health/status"
	pathCheck   = "/health/check"
	pathOffline = "/health/offline"
	pathOnline  = "/health/online"
)

// Fixed bodies.
var (
	bodyOK          = []byte(`{"code":200}`)
	bodyNotModified = []byte(`{"code":304}`)
	bodyNoSchema    = []byte(`{"code":404}`)
	bodyFailed      = []byte(`{"code":500}`)
)

// msgAdminOnly answers an admin path asked of the public handler.
const msgAdminOnly = "not found: /monitor, /reload, /health/offline and /health/online are served on the admin address only"

// publicRoutes is the clients' handler: the list, and the read-only health answers a load
// balancer polls. Its requests outside /health/ are the traffic /health/offline waits for.
func (s *Server) publicRoutes() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Path
		if !strings.HasPrefix(path, pathHealth) {
			s.lastBusiness.Store(time.Now().UnixNano())
		}
		switch path {
		case pathFetch:
			if methodAllowed(w, r, http.MethodGet, http.MethodHead) {
				s.fetch(w, r)
			}
		case pathStatus:
			if methodAllowed(w, r, http.MethodGet, http.MethodHead) {
				s.healthStatus(w, r)
			}
		case pathCheck:
			if methodAllowed(w, r, http.MethodGet, http.MethodHead) {
				writeJSON(w, http.StatusOK, bodyOK)
			}
		case pathMonitor, pathReload, pathOffline, pathOnline:
			writeError(w, http.StatusNotFound, msgAdminOnly)
		default:
			writeError(w, http.StatusNotFound, "not found")
		}
	})
}

// fetch answers /fetch_sql_proxy_list.
func (s *Server) fetch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	schema := q.Get("schema")
	if schema == "" {
		writeError(w, http.StatusBadRequest, "missing schema parameter")
		return
	}
	ss := s.state.Load().schemas[schema]
	if ss == nil {
		if s.hideUnknown {
			_, msg := bearerKey(r.Header.Get("Authorization"))
			if msg == "" {
				msg = msgIllegalKey
			}
			writeError(w, http.StatusForbidden, msg)
			return
		}
		writeJSON(w, http.StatusOK, bodyNoSchema)
		return
	}
	if ss.doc.AuthEnable {
		if msg := ss.authorize(r.Header.Get("Authorization")); msg != "" {
			writeError(w, http.StatusForbidden, msg)
			return
		}
	}
	a, az := ss.choose(q, r.RemoteAddr)
	code := 200
	if q.Get("md5") == a.md5 {
		code = 304
		writeJSON(w, http.StatusOK, bodyNotModified)
	} else {
		writeJSON(w, http.StatusOK, a.body)
	}
	if s.log.Enabled(r.Context(), slog.LevelDebug) {
		s.log.Debug("configserver: fetch", "schema", schema, "code", code, "md5", a.md5, "az", az,
			"clientAZ", q.Get("az"), "clientIP", q.Get("ip"), "remote", r.RemoteAddr,
			"clientFeatureLevel", q.Get("clientFeatureLevel"), "clientVersion", q.Get("clientVersion"))
	}
}

// reload answers /reload: HTTP 200 either way, with the outcome in the body as Java does.
// Concurrent calls share one read of the store (see Server.Reload).
func (s *Server) reload(w http.ResponseWriter, r *http.Request) {
	if err := s.Reload(r.Context()); err != nil {
		if r.Context().Err() != nil {
			return // the caller left; the shared read goes on and logs nothing for it
		}
		s.log.Error("configserver: reload failed, serving the previous documents", "backend", s.backend.Kind(), "err", err)
		writeJSON(w, http.StatusOK, bodyFailed)
		return
	}
	writeJSON(w, http.StatusOK, bodyOK)
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// errorBody is the Java server's error shape; a nil Msg is written as null.
type errorBody struct {
	Code int     `json:"code"`
	Msg  *string `json:"msg"`
	Data any     `json:"data"`
}

// writeError writes {"code":status,"msg":msg,"data":null} with HTTP status; an empty msg is null.
func writeError(w http.ResponseWriter, status int, msg string) {
	b := errorBody{Code: status}
	if msg != "" {
		b.Msg = &msg
	}
	body, _ := json.Marshal(b) // always encodes
	writeJSON(w, status, body)
}

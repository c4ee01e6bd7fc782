package configserver

import (
	"net"
	"net/http"
	"net/netip"
	"time"
)

// healthStatus answers /health/status: what a load balancer in front of the servers polls.
func (s *Server) healthStatus(w http.ResponseWriter, _ *http.Request) {
	if s.online.Load() {
		writeJSON(w, http.StatusOK, bodyOK)
		return
	}
	writeError(w, http.StatusInternalServerError, "")
}

// healthOffline answers /health/offline: it takes the server offline (so /health/status fails
// and the load balancer stops sending traffic), then answers 500 while requests other than
// /health/* were served within the drain window and 200 once none were. Operators call it until
// it answers 200 and then stop the process.
func (s *Server) healthOffline(w http.ResponseWriter, r *http.Request) {
	if !s.switchAllowed(w, r) {
		return
	}
	if s.online.Swap(false) {
		s.log.Warn("configserver: offline", "remote", r.RemoteAddr)
	}
	if last := s.lastBusiness.Load(); last != 0 && time.Since(time.Unix(0, last)) < s.drainWindow {
		writeError(w, http.StatusInternalServerError, "requests are still arriving")
		return
	}
	writeJSON(w, http.StatusOK, bodyOK)
}

// healthOnline answers /health/online: it brings the server back online.
func (s *Server) healthOnline(w http.ResponseWriter, r *http.Request) {
	if !s.switchAllowed(w, r) {
		return
	}
	if !s.online.Swap(true) {
		s.log.Warn("configserver: online again", "remote", r.RemoteAddr)
	}
	writeJSON(w, http.StatusOK, bodyOK)
}

// switchAllowed answers 403 and returns false when the caller may not switch the server online
// or offline.
func (s *Server) switchAllowed(w http.ResponseWriter, r *http.Request) bool {
	if s.allowRemote || isLoopback(r.RemoteAddr) {
		return true
	}
	s.log.Warn("configserver: online/offline refused to a non-loopback client", "path", r.URL.Path, "remote", r.RemoteAddr)
	writeError(w, http.StatusForbidden, "not allowed")
	return false
}

// isLoopback reports whether a RemoteAddr ("ip:port", or a bare IP) is a loopback address.
func isLoopback(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

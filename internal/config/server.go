package config

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
)

// Defaults of the server section.
const (
	DefaultPort = 8080
	DefaultHost = "127.0.0.1"
)

// Server is where the HTTP server listens (outside Lambda).
type Server struct {
	Host string
	Port int // 0: any free port (the server logs which)
}

func (s *Server) parse(r *reader) {
	s.Port = DefaultPort
	if v := r.str(EnvPort); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 0 || p > 65535 {
			r.problem(EnvPort, fmt.Sprintf("%q: want a TCP port number, 1 to 65535 (0: any free port)", v))
		} else {
			s.Port = p
		}
	}
	s.Host = DefaultHost
	if v := r.str(EnvHost); v != "" {
		if strings.ContainsAny(v, ":/ ") && net.ParseIP(v) == nil {
			r.problem(EnvHost, fmt.Sprintf("%q: want an IP address or host name to bind, e.g. 127.0.0.1 or 0.0.0.0 (the port comes from PORT)", v))
		} else {
			s.Host = v
		}
	}
}

// Addr is the address the HTTP server listens on.
func (s Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// Log is how the process logs.
type Log struct {
	LogLevel  slog.Level
	LogFormat string // "json" or "text"
}

func (l *Log) parse(r *reader, p Platform) {
	l.LogLevel = slog.LevelInfo
	if v := r.str(EnvLogLevel); v != "" {
		if err := l.LogLevel.UnmarshalText([]byte(v)); err != nil {
			r.problem(EnvLogLevel, fmt.Sprintf("%q: want debug, info, warn or error", v))
		}
	}
	l.LogFormat = "text"
	if p.OnCloud() {
		l.LogFormat = "json"
	}
	if v := r.str(EnvLogFormat); v != "" {
		if v != "json" && v != "text" {
			r.problem(EnvLogFormat, fmt.Sprintf("%q: want json or text", v))
		} else {
			l.LogFormat = v
		}
	}
}

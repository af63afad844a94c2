package testenv

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/mail"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-smtp"
)

// MailSink is the embedded mail server of local runs and tests: a real SMTP server
// (emersion/go-smtp, the server library many Go mail servers are built on) that keeps every
// message it is handed, in files under its directory and in memory, and shows them on a web
// page and as JSON. It delivers nothing further.
//
// Mailpit would show them more richly, but its Go module ships without its web interface
// (built by npm in its own release process) and compiles a pure-Go SQLite, minutes on every
// fresh machine, for what a directory of messages does here.
type MailSink struct {
	// SMTPURL is what LINKMESH_SMTP_URL names to send here: smtp://127.0.0.1:<port>.
	SMTPURL string
	// ViewURL is the web view: the messages, newest first; ViewURL+"/api/messages" is the
	// same as JSON.
	ViewURL string

	dir  string
	smtp *smtp.Server
	http *http.Server
	mu   sync.Mutex
	msgs []Mail
}

// Mail is one message the sink received.
type Mail struct {
	ID         int       `json:"id"`
	ReceivedAt time.Time `json:"received_at"`
	From       string    `json:"from"`
	To         []string  `json:"to"`
	Subject    string    `json:"subject"`
	// Text is the body, decoded (quoted-printable or base64) when the message said so.
	Text string `json:"text"`
}

// maxMailSize bounds one message: our mails are a few kilobytes.
const maxMailSize = 1 << 20

// StartMailSink starts the sink on free loopback ports, keeping messages under dir.
func StartMailSink(dir string) (*MailSink, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("mail sink: %w", err)
	}
	m := &MailSink{dir: dir}
	sl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("mail sink: %w", err)
	}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = sl.Close()
		return nil, fmt.Errorf("mail sink: %w", err)
	}
	m.smtp = smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &sinkSession{sink: m}, nil }))
	m.smtp.Domain = "localhost"
	m.smtp.MaxMessageBytes = maxMailSize
	m.smtp.MaxRecipients = 50
	m.smtp.ReadTimeout, m.smtp.WriteTimeout = 30*time.Second, 30*time.Second
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", m.page)
	mux.HandleFunc("GET /api/messages", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(m.Messages())
	})
	m.http = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	m.SMTPURL = "smtp://" + sl.Addr().String()
	m.ViewURL = "http://" + hl.Addr().String()
	go func() { _ = m.smtp.Serve(sl) }()
	go func() { _ = m.http.Serve(hl) }()
	return m, nil
}

// Messages returns every message received so far, newest first.
func (m *MailSink) Messages() []Mail {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Mail, len(m.msgs))
	for i, msg := range m.msgs {
		out[len(m.msgs)-1-i] = msg
	}
	return out
}

// Stop closes both listeners.
func (m *MailSink) Stop() {
	_ = m.smtp.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = m.http.Shutdown(ctx)
}

// keep stores one received message.
func (m *MailSink) keep(from string, to []string, raw []byte) error {
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("not a message: %w", err)
	}
	body, err := io.ReadAll(decoded(msg))
	if err != nil {
		return fmt.Errorf("read the body: %w", err)
	}
	subject, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	if err != nil {
		subject = msg.Header.Get("Subject")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	id := len(m.msgs) + 1
	if err := os.WriteFile(filepath.Join(m.dir, strconv.Itoa(id)+".eml"), raw, 0o600); err != nil {
		return err
	}
	m.msgs = append(m.msgs, Mail{ID: id, ReceivedAt: time.Now().UTC(), From: from, To: to, Subject: subject,
		Text: strings.ReplaceAll(string(body), "\r\n", "\n")})
	return nil
}

// decoded reads msg's body through its Content-Transfer-Encoding.
func decoded(msg *mail.Message) io.Reader {
	switch strings.ToLower(strings.TrimSpace(msg.Header.Get("Content-Transfer-Encoding"))) {
	case "quoted-printable":
		return quotedprintable.NewReader(msg.Body)
	case "base64":
		return base64.NewDecoder(base64.StdEncoding, msg.Body)
	}
	return msg.Body
}

var pageTemplate = template.Must(template.New("mail").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>linkmesh mail</title>
<style>body{font:15px system-ui,sans-serif;margin:2em;max-width:60em}article{border-top:1px solid #ccc;padding:1em 0}
pre{white-space:pre-wrap;background:#f6f6f6;padding:1em}small{color:#666}</style></head><body>
<h1>Mail sent by linkmesh</h1><p>{{len .}} message(s), newest first. Nothing here was delivered anywhere else.</p>
{{range .}}<article><h2>{{.Subject}}</h2><small>#{{.ID}} · {{.ReceivedAt.Format "2006-01-02 15:04:05"}} UTC · from {{.From}} to {{range .To}}{{.}} {{end}}</small>
<pre>{{.Text}}</pre></article>{{end}}</body></html>`))

func (m *MailSink) page(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = pageTemplate.Execute(w, m.Messages())
}

// sinkSession is one SMTP transaction.
type sinkSession struct {
	sink *MailSink
	from string
	to   []string
}

func (s *sinkSession) Reset()        { s.from, s.to = "", nil }
func (s *sinkSession) Logout() error { return nil }

func (s *sinkSession) Mail(from string, _ *smtp.MailOptions) error {
	s.from = from
	return nil
}

func (s *sinkSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.to = append(s.to, to)
	return nil
}

func (s *sinkSession) Data(r io.Reader) error {
	raw, err := io.ReadAll(io.LimitReader(r, maxMailSize+1))
	if err != nil {
		return err
	}
	if len(raw) > maxMailSize {
		return errors.New("message too large")
	}
	if err := s.sink.keep(s.from, s.to, raw); err != nil {
		return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: err.Error()}
	}
	return nil
}

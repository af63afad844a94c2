// Package mail sends the auth service's mail (verification, password reset) through SMTP,
// from a durable outbox: a message is stored with the change that asks for it, and a relay
// sends what is due, retrying with backoff while the mail server is away. A mail server
// outage delays mail and loses none; a crash between sending and recording it sends a
// message twice at worst (at least once).
package mail

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"
)

// Message is one plain-text mail to one address.
type Message struct {
	To      string
	Subject string
	Text    string
}

// Sender hands a message to a mail server.
type Sender interface {
	Send(ctx context.Context, m Message) error
}

// SMTP sends through the server of a LINKMESH_SMTP_URL: smtps://user:pass@host:465 (TLS
// from the start), or smtp://user:pass@host:587 (STARTTLS: required when the URL carries
// credentials and names another host than this one, used when offered otherwise).
type SMTP struct {
	host     string
	opts     []gomail.Option
	from     string
	redacted string
}

// sendTimeout bounds one delivery to the mail server.
const sendTimeout = 30 * time.Second

// NewSMTP checks rawURL and from and returns the sender.
func NewSMTP(rawURL, from string) (*SMTP, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Path != "" && u.Path != "/" {
		return nil, errors.New("LINKMESH_SMTP_URL must be smtp://[user:pass@]host[:port] or smtps://…")
	}
	host := u.Hostname()
	opts := []gomail.Option{gomail.WithTimeout(sendTimeout)}
	port := 587
	if u.Scheme == "smtps" {
		port = 465
		opts = append(opts, gomail.WithSSL())
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil || port < 1 || port > 65535 {
			return nil, errors.New("LINKMESH_SMTP_URL has a bad port")
		}
	}
	opts = append(opts, gomail.WithPort(port))
	user := u.User.Username()
	pass, _ := u.User.Password()
	if u.Scheme == "smtp" {
		policy := gomail.TLSOpportunistic
		if user != "" && !loopback(host) {
			policy = gomail.TLSMandatory // credentials never cross the network in the clear
		}
		opts = append(opts, gomail.WithTLSPolicy(policy))
	}
	if user != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover), gomail.WithUsername(user), gomail.WithPassword(pass))
	}
	m := gomail.NewMsg()
	if err := m.From(from); err != nil {
		return nil, fmt.Errorf("LINKMESH_MAIL_FROM: %w", err)
	}
	return &SMTP{host: host, opts: opts, from: from, redacted: u.Redacted()}, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// String names the server without its password.
func (s *SMTP) String() string { return s.redacted }

// Send delivers m, one connection per message (mail is rare: a registration, a reset).
func (s *SMTP) Send(ctx context.Context, m Message) error {
	msg := gomail.NewMsg()
	if err := msg.From(s.from); err != nil {
		return err
	}
	if err := msg.To(m.To); err != nil {
		return permanent(fmt.Errorf("recipient: %w", err))
	}
	msg.Subject(m.Subject)
	msg.SetDate()
	msg.SetMessageID()
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)
	c, err := gomail.NewClient(s.host, s.opts...)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	if err := c.DialAndSendWithContext(ctx, msg); err != nil {
		return fmt.Errorf("send mail through %s: %w", s.host, err)
	}
	return nil
}

// permanentError is a failure no retry can mend (an address the mail library refuses).
type permanentError struct{ error }

func permanent(err error) error { return permanentError{err} }

// IsPermanent tells a failure no retry can mend.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// cleanHeader keeps a subject on one line.
func cleanHeader(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

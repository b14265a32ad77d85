package config

import "github.com/cairn-dev/cairn/notify"

// Bus is the notification bus that carries hints between instances.
type Bus struct {
	// Notify is the bus URL (CAIRN_NOTIFY); empty: each instance alone.
	Notify string
}

func (b *Bus) parse(r *reader) {
	b.Notify = r.str(EnvNotify)
	if b.Notify != "" {
		r.checkURL(EnvNotify, b.Notify, notify.Schemes(), "notification bus")
	}
}

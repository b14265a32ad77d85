package config

import "github.com/cairn-dev/cairn/blob"

// Store is the bucket all state lives in.
type Store struct {
	// Blob is the bucket URL (CAIRN_BLOB).
	Blob string
}

func (s *Store) parse(r *reader) {
	s.Blob = r.str(EnvBlob)
	if s.Blob == "" {
		r.problem(EnvBlob, "required: the bucket URL, e.g. s3://my-bucket?region=us-east-1, gs://my-bucket, file:///var/lib/cairn, mem://")
		return
	}
	r.checkURL(EnvBlob, s.Blob, blob.Schemes(), "bucket")
}

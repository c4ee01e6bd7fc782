package configserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lbd-go/lbd/nodes"
)

// DefaultFilePollInterval is how often the file backend looks for a changed file by default.
const DefaultFilePollInterval = 2 * time.Second

// FileConfig describes a file backend for NewFile.
type FileConfig struct {
	// Path is the file holding every document: one JSON document, a JSON array of documents, or
	// the same as a YAML list (a file whose first non-blank character is '{' or '[' is read as
	// JSON). Required.
	Path string
	// PollInterval is how often the file's modification time and size are checked; a change
	// reloads it. Zero means DefaultFilePollInterval (2 s); a negative value turns polling off,
	// leaving /reload (Server.Reload) as the only way to pick up edits.
	PollInterval time.Duration
	// Logger receives reloads and rejected files. Nil means slog.Default().
	Logger *slog.Logger
}

// File is a Backend reading all documents from one file. Loading is all or nothing: a file
// that cannot be read or parsed, an invalid document or two documents for one schema reject
// the whole file. At start that fails the Server; later the previous documents stay served and
// the reason is logged once per version of the file.
type File struct {
	path     string
	interval time.Duration
	log      *slog.Logger

	mu       sync.Mutex // serializes loads and publishing
	publish  func(map[string]*nodes.Document)
	seen     fileStamp // the version last loaded or rejected
	statFail string    // the last stat error logged, "" when the file was there

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// fileStamp tells versions of the file apart.
type fileStamp struct {
	mod  time.Time
	size int64
}

// NewFile returns a file backend. It checks the configuration only; the file is read by Start.
func NewFile(cfg FileConfig) (*File, error) {
	if cfg.Path == "" {
		return nil, errors.New("configserver: FileConfig.Path is empty")
	}
	f := &File{path: cfg.Path, interval: cfg.PollInterval, log: cfg.Logger}
	if f.interval == 0 {
		f.interval = DefaultFilePollInterval
	}
	if f.log == nil {
		f.log = slog.Default()
	}
	return f, nil
}

// Kind implements Backend; it is "file".
func (f *File) Kind() string { return "file" }

// Start implements Backend: it loads the file, failing on any problem, then polls it.
func (f *File) Start(_ context.Context, publish func(map[string]*nodes.Document)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.publish != nil {
		return errors.New("configserver: file backend started twice")
	}
	docs, stamp, err := f.read()
	if err != nil {
		return err
	}
	f.publish, f.seen = publish, stamp
	publish(docs)
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel, f.done = cancel, make(chan struct{})
	if f.interval > 0 {
		go f.poll(ctx)
	} else {
		close(f.done)
	}
	return nil
}

// Reload implements Backend: it reads the file whatever its modification time. On error the
// previous documents stay served.
func (f *File) Reload(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.publish == nil {
		return errors.New("configserver: file backend not started")
	}
	docs, stamp, err := f.read()
	f.seen = stamp
	if err != nil {
		return err
	}
	f.publish(docs)
	f.log.Info("configserver: file reloaded", "path", f.path, "schemas", len(docs))
	return nil
}

// Close implements Backend: it stops polling.
func (f *File) Close() error {
	f.once.Do(func() {
		f.mu.Lock()
		cancel, done := f.cancel, f.done
		f.mu.Unlock()
		if cancel != nil {
			cancel()
			<-done
		}
	})
	return nil
}

func (f *File) poll(ctx context.Context) {
	defer close(f.done)
	t := time.NewTicker(f.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f.check()
		}
	}
}

// check reloads the file when its modification time or size changed.
func (f *File) check() {
	f.mu.Lock()
	defer f.mu.Unlock()
	fi, err := os.Stat(f.path)
	if err != nil {
		if msg := err.Error(); msg != f.statFail {
			f.statFail = msg
			f.log.Error("configserver: cannot stat the documents file, serving the previous documents", "path", f.path, "err", err)
		}
		return
	}
	if f.statFail != "" {
		f.statFail = ""
		f.log.Info("configserver: documents file is back", "path", f.path)
	}
	if (fileStamp{fi.ModTime(), fi.Size()}) == f.seen {
		return
	}
	docs, stamp, err := f.read()
	f.seen = stamp
	if err != nil {
		f.log.Error("configserver: documents file rejected, serving the previous documents", "path", f.path, "err", err)
		return
	}
	f.publish(docs)
	f.log.Info("configserver: file changed, reloaded", "path", f.path, "schemas", len(docs))
}

// read loads and validates the whole file. The stamp is taken before reading, so a change made
// while reading is seen by the next check.
func (f *File) read() (map[string]*nodes.Document, fileStamp, error) {
	var stamp fileStamp
	if fi, err := os.Stat(f.path); err == nil {
		stamp = fileStamp{fi.ModTime(), fi.Size()}
	}
	data, err := os.ReadFile(f.path)
	if err != nil {
		return nil, stamp, fmt.Errorf("reading documents: %w", err)
	}
	docs, err := ParseDocuments(data)
	if err != nil {
		return nil, stamp, fmt.Errorf("%s: %w", f.path, err)
	}
	return docs, stamp, nil
}

// ParseDocuments reads the file backend's format: a JSON array of documents, one JSON document
// alone, or a YAML list of documents (data whose first non-blank character is '[' or '{' is read
// as JSON). Every document must pass nodes.ParseDocument and checkAPIKeys and name a schema of
// its own; the first problem found is returned, naming the entry. An empty list is valid and
// serves no schema.
func ParseDocuments(data []byte) (map[string]*nodes.Document, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, errors.New("no documents: the file is empty")
	}
	var entries []json.RawMessage
	if trimmed[0] == '{' {
		entries = []json.RawMessage{trimmed} // one schema's document, as etcd holds it
	} else if trimmed[0] == '[' {
		if err := json.Unmarshal(trimmed, &entries); err != nil {
			return nil, fmt.Errorf("not a JSON array of documents: %v", err)
		}
	} else {
		var list []any
		if err := yaml.Unmarshal(trimmed, &list); err != nil {
			return nil, fmt.Errorf("neither a JSON document, a JSON array nor a YAML list of documents: %v", err)
		}
		for i, e := range list {
			raw, err := json.Marshal(e)
			if err != nil {
				return nil, fmt.Errorf("entry %d: not a document: %v", i, err)
			}
			entries = append(entries, raw)
		}
	}
	docs := make(map[string]*nodes.Document, len(entries))
	for i, raw := range entries {
		d, err := nodes.ParseDocument(raw, "")
		if err == nil {
			err = checkAPIKeys(d)
		}
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		if docs[d.Schema] != nil {
			return nil, fmt.Errorf("entry %d: schema %q is listed twice", i, d.Schema)
		}
		docs[d.Schema] = d
	}
	return docs, nil
}

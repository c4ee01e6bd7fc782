package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"
)

// Order is the row the workers write. Worker and Seq name a row uniquely, so a row whose
// insert failed can be looked up later to learn whether it reached the table after all.
type Order struct {
	ID     uint   `gorm:"primaryKey"`
	Worker int    `gorm:"uniqueIndex:idx_worker_seq"`
	Seq    int    `gorm:"uniqueIndex:idx_worker_seq"`
	Note   string `gorm:"size:64"`
}

const (
	// errorPause is how long a worker waits after an error, so that a cluster with no proxy
	// left is not hammered in a tight loop.
	errorPause = 100 * time.Millisecond
	// statementTimeout bounds each statement of the workload.
	statementTimeout = 5 * time.Second
)

// workload runs workers that each insert rows and read them back by primary key. Every
// worker writes its own rows (Worker = its number, Seq = 1, 2, 3...), so at the end the
// rows it wrote can be counted and checked against the table.
type workload struct {
	table string
	db    *gorm.DB // bound to the table; safe for concurrent use

	inserted atomic.Int64 // inserts that succeeded
	readBack atomic.Int64 // rows read back and found as written
	errs     atomic.Int64 // failed statements, and rows read back wrong

	mu      sync.Mutex
	lastErr string

	// unsure[w] lists the Seq of each insert of worker w that failed. A failed insert may
	// still have reached the database (the proxy can vanish after forwarding it), so these
	// are looked up once the workload is over. Only worker w touches unsure[w].
	unsure [][]int
	wg     sync.WaitGroup
}

// newWorkload prepares a workload writing into table through db.
func newWorkload(db *gorm.DB, table string, workers int) *workload {
	return &workload{
		table: table,
		// A gorm.DB returned by a chain method such as Table must not be shared; Session turns
		// it into one that can, with the table kept for every statement made from it.
		db:     db.Table(table).Session(&gorm.Session{}),
		unsure: make([][]int, workers),
	}
}

// createTable creates the table for Order.
func (w *workload) createTable(ctx context.Context) error {
	return w.db.WithContext(ctx).AutoMigrate(&Order{})
}

// dropTable drops the table.
func (w *workload) dropTable(ctx context.Context) error {
	return w.db.WithContext(ctx).Migrator().DropTable(w.table)
}

// start starts the workers; they stop when ctx is done. wait waits for them.
func (w *workload) start(ctx context.Context) {
	for i := range w.unsure {
		w.wg.Add(1)
		go w.worker(ctx, i)
	}
}

func (w *workload) wait() { w.wg.Wait() }

// worker inserts rows one by one, reading each back by its new ID, until ctx is done.
func (w *workload) worker(ctx context.Context, id int) {
	defer w.wg.Done()
	for seq := 1; ctx.Err() == nil; seq++ {
		o := Order{Worker: id, Seq: seq, Note: fmt.Sprintf("order %d of worker %d", seq, id)}
		if err := w.exec(func(db *gorm.DB) error { return db.Create(&o).Error }); err != nil {
			w.unsure[id] = append(w.unsure[id], seq)
			pause(ctx, errorPause)
			continue
		}
		w.inserted.Add(1)

		var got Order
		if err := w.exec(func(db *gorm.DB) error { return db.Take(&got, o.ID).Error }); err != nil {
			pause(ctx, errorPause)
			continue
		}
		if got.Worker != id || got.Seq != seq {
			w.noteError(fmt.Errorf("row %d read back as worker %d seq %d, want worker %d seq %d",
				o.ID, got.Worker, got.Seq, id, seq))
			continue
		}
		w.readBack.Add(1)
	}
}

// exec runs one statement and counts its error, if any. The statement gets its own timeout
// rather than the run's context: ending the run must not cancel an insert half-way, which
// would leave it unknown whether the row was written.
func (w *workload) exec(stmt func(db *gorm.DB) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), statementTimeout)
	defer cancel()
	err := stmt(w.db.WithContext(ctx))
	if err != nil {
		w.noteError(err)
	}
	return err
}

func (w *workload) noteError(err error) {
	w.errs.Add(1)
	w.mu.Lock()
	w.lastErr = err.Error()
	w.mu.Unlock()
}

// lastError returns the text of the most recent error ("" when none).
func (w *workload) lastError() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastErr
}

// settle looks up every row whose insert failed and returns how many reached the table
// anyway. Call it after wait.
func (w *workload) settle(ctx context.Context) (landed int64, err error) {
	for worker, seqs := range w.unsure {
		for _, seq := range seqs {
			var n int64
			err := w.db.WithContext(ctx).Where("worker = ? AND seq = ?", worker, seq).Count(&n).Error
			if err != nil {
				return landed, fmt.Errorf("look up worker %d seq %d: %w", worker, seq, err)
			}
			landed += n
		}
	}
	return landed, nil
}

// count returns the number of rows in the table.
func (w *workload) count(ctx context.Context) (int64, error) {
	var n int64
	err := w.db.WithContext(ctx).Count(&n).Error
	return n, err
}

// pause waits for d or until ctx is done.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

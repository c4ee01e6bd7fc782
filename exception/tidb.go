package exception

// TiDBName is the name under which [TiDB] is registered: exceptionSorter=tidb.
const TiDBName = "tidb"

// TiDB is the default rules without the OceanBase range. TiDB uses the numbers 8000-8999 for
// ordinary statement errors (8005 write conflict, 8001 memory quota exceeded, 8027/8028 schema
// changed) on sessions that stay healthy; under the default sorter a burst of write conflicts
// would retire connections and take healthy TiDB servers down. Every other rule, SQLSTATE class
// 08 included, still applies. It also implements [Classifier].
var TiDB Sorter = tidbSorter{}

type tidbSorter struct{}

// IsFatal reports whether err is fatal under the TiDB rules.
func (tidbSorter) IsFatal(err error) bool {
	fatal, _ := classify(err, false)
	return fatal
}

// Classify reports whether err is fatal under the TiDB rules and why.
func (tidbSorter) Classify(err error) (bool, string) { return classify(err, false) }

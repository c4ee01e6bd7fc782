module github.com/lbd-go/lbd/sqlxadapter

go 1.26.0

replace github.com/lbd-go/lbd => ..

require (
	github.com/jmoiron/sqlx v1.4.0
	github.com/lbd-go/lbd v0.3.0
)

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	github.com/go-sql-driver/mysql v1.10.1 // indirect
)

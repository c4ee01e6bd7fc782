module github.com/lbd-go/lbd/gormplugin

go 1.26.0

replace github.com/lbd-go/lbd => ..

require (
	github.com/go-sql-driver/mysql v1.10.1
	github.com/lbd-go/lbd v0.3.0
	go.uber.org/goleak v1.3.0
	gorm.io/driver/mysql v1.6.0
	gorm.io/gorm v1.31.2
)

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	github.com/davecgh/go-spew v1.1.2-0.20180830191138-d8f796af33cc // indirect
	github.com/jinzhu/inflection v1.0.0 // indirect
	github.com/jinzhu/now v1.1.5 // indirect
	github.com/pmezard/go-difflib v1.0.1-0.20181226105442-5d4384ee4fb2 // indirect
	github.com/stretchr/testify v1.11.1 // indirect
	golang.org/x/text v0.43.0 // indirect
)

module github.com/lbd-go/lbd/gormplugin

go 1.26.0

replace github.com/lbd-go/lbd => ..

require (
	github.com/go-sql-driver/mysql v1.10.1
	github.com/lbd-go/lbd v0.3.0
	gorm.io/driver/mysql v1.6.0
	gorm.io/gorm v1.31.2
)

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	github.com/jinzhu/inflection v1.0.0 // indirect
	github.com/jinzhu/now v1.1.5 // indirect
	golang.org/x/text v0.43.0 // indirect
)

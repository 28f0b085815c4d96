package queuemax

import "testing"

func TestEarlierNames_Postgres(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	schema := pgTestSchema(t, dsn)
	testEarlierNames(t, func() Config { return Config{Store: &pgTarget{dsn: dsn, schema: schema}} })
}

func TestCatalogResolution_Postgres(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	schema := pgTestSchema(t, dsn)
	testCatalogResolution(t, func() Config { return Config{Store: &pgTarget{dsn: dsn, schema: schema}} })
}

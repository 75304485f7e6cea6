-- the compute cluster, as production runs it
CREATE CLUSTER compute (SIZE = '100cc', REPLICATION FACTOR = 2);
GRANT USAGE ON CLUSTER compute TO analyst;
COMMENT ON CLUSTER compute IS 'views and materialized views';

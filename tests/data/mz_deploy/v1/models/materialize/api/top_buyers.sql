CREATE MATERIALIZED VIEW top_buyers IN CLUSTER compute AS
SELECT buyer, wins FROM core.bid_counts WHERE wins > 10;

-- the highest bid of every auction
CREATE MATERIALIZED VIEW winning_bids IN CLUSTER compute AS
SELECT DISTINCT ON (auction_id) id, auction_id, buyer, amount
FROM sources.bids
ORDER BY auction_id, amount DESC;

CREATE INDEX winning_bids_idx IN CLUSTER serving ON winning_bids (auction_id);

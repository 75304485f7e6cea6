CREATE VIEW bid_counts AS SELECT buyer, count(*) AS wins FROM winning_bids GROUP BY buyer;
CREATE DEFAULT INDEX IN CLUSTER serving ON bid_counts;

CREATE VIEW buyer_report AS SELECT buyer FROM top_buyers;

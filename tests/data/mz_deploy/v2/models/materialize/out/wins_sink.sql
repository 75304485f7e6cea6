CREATE SINK wins_sink IN CLUSTER sinks FROM core.winning_bids
INTO KAFKA CONNECTION sources.kafka_conn (TOPIC 'wins')
FORMAT JSON ENVELOPE DEBEZIUM;

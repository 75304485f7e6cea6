-- bids, one row per bid
create table BIDS
    from source AUCTIONS (reference bids)

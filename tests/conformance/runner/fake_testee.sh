#!/bin/sh
# A testee that answers from a table, telling the lie named by $1, so the runner's checks of
# replies that a correct testee never sends can be seen to fail (self_test.sh).
lie=$1
msg="message=0:0 payload=a delivery_count=1 timestamp_ns=1000000000 lost=0"
while read -r verb rest; do
    case $verb:$lie in
    hello:*) echo "MQ_OK protocol=1" ;;
    subscription_open:frees) echo "MQ_OK frees=1" ;;
    subscription_open:*) echo "MQ_OK frees=0" ;;
    member_join:*) echo "MQ_OK id=m" ;;
    rebalances:handle) echo "MQ_OK rebalance=1:other" ;;
    rebalances:*) echo "MQ_OK rebalance=1:m" ;;
    poll:count) echo "MQ_OK count=2 $msg" ;;
    poll:nopayload) echo "MQ_OK count=1 message=0:0 delivery_count=1 timestamp_ns=1000000000 lost=0" ;;
    poll:garbage) echo "what" ;;
    poll:refuse) echo "testee_error detail=no%20polls%20here" ;;
    poll:badcode) echo "MQ_OK count=1 message=0:0 payload=%zz delivery_count=1 timestamp_ns=0 lost=0" ;;
    poll:*) echo "MQ_OK count=1 $msg" ;;
    publish:exit) exit 3 ;;
    publish:*) echo "MQ_OK partition=0 offset=0" ;;
    end:leak) echo "MQ_OK"; read -r line; exit 1 ;;
    frees:*) echo "MQ_OK frees=1" ;;
    *) echo "MQ_OK" ;;
    esac
done

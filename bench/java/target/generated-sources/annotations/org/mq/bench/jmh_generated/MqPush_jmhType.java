package org.mq.bench.jmh_generated;
public class MqPush_jmhType extends MqPush_jmhType_B3 {
}


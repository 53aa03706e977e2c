package org.mq.bench.jmh_generated;
public class MqPull_jmhType extends MqPull_jmhType_B3 {
}


package org.mq.bench.jmh_generated;
public class MqFanOut_jmhType extends MqFanOut_jmhType_B3 {
}


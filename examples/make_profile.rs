//! Writes a synthetic ETDump for scale tests: `make_profile OUT.etdp
//! [--events N] [--runs R]`. Each of the R runs holds N / R events: profile
//! events of operator calls, every tenth an allocation from one of two
//! allocators, as the runtime's profiler writes them.

use flatbuffers::FlatBufferBuilder;
use ptefs::schema::etdump as fb;

fn main() {
    let mut args = std::env::args().skip(1);
    let out = args
        .next()
        .expect("usage: make_profile OUT.etdp [--events N] [--runs R]");
    let (mut n, mut runs) = (1_000_000u64, 1u64);
    while let Some(flag) = args.next() {
        let v: u64 = args
            .next()
            .and_then(|v| v.parse().ok())
            .expect("a number after each flag");
        match flag.as_str() {
            "--events" => n = v,
            "--runs" => runs = v.max(1),
            other => panic!("unknown flag {other}"),
        }
    }
    let mut b = FlatBufferBuilder::new();
    let names = [
        b.create_string("native_call_addmm.out"),
        b.create_string("native_call_relu.out"),
        b.create_string("Method::execute"),
    ];
    let allocator_names = [b.create_string("planned"), b.create_string("temp")];
    let mut run_data = Vec::new();
    for r in 0..runs {
        let per_run = n / runs + u64::from(r < n % runs);
        let mut events = Vec::with_capacity(per_run as usize);
        for i in 0..per_run {
            let event = if i % 10 == 9 {
                let a = fb::AllocationEvent::create(
                    &mut b,
                    &fb::AllocationEventArgs {
                        allocator_id: (i % 2) as i32,
                        allocation_size: 64 * (i % 7 + 1),
                    },
                );
                fb::EventArgs {
                    allocation_event: Some(a),
                    ..Default::default()
                }
            } else {
                let start = i * 100;
                let p = fb::ProfileEvent::create(
                    &mut b,
                    &fb::ProfileEventArgs {
                        name: Some(names[(i % 3) as usize]),
                        chain_index: 0,
                        instruction_id: (i % 1000) as i32,
                        start_time: start,
                        end_time: start + 40 + i % 50,
                        ..Default::default()
                    },
                );
                fb::EventArgs {
                    profile_event: Some(p),
                    ..Default::default()
                }
            };
            events.push(fb::Event::create(&mut b, &event));
        }
        let allocators: Vec<_> = allocator_names
            .iter()
            .map(|&name| fb::Allocator::create(&mut b, &fb::AllocatorArgs { name: Some(name) }))
            .collect();
        let allocators = b.create_vector(&allocators);
        let events = b.create_vector(&events);
        let name = b.create_string("Execute");
        run_data.push(fb::RunData::create(
            &mut b,
            &fb::RunDataArgs {
                name: Some(name),
                allocators: Some(allocators),
                events: Some(events),
                ..Default::default()
            },
        ));
    }
    let run_data = b.create_vector(&run_data);
    let root = fb::ETDump::create(
        &mut b,
        &fb::ETDumpArgs {
            version: 0,
            run_data: Some(run_data),
        },
    );
    b.finish_size_prefixed(root, Some("ED00"));
    std::fs::write(&out, b.finished_data()).expect("writing the ETDump");
}

//! Pins the x86_64 Linux layout of every `sys` type and the value of every
//! constant. The numbers were checked once against the real `wsrep_api.h`
//! v26 with a throwaway C program (sizeof/offsetof under gcc); they are
//! hard-coded so that an edit to `sys.rs` cannot silently move a field.

use std::ffi::c_int;
use std::mem::{align_of, offset_of, size_of};

use super::sys::*;

/// Asserts size, alignment and the offset of each listed field.
macro_rules! pin {
    ($ty:ty, size $size:expr, align $align:expr $(, $field:ident @ $off:expr)* $(,)?) => {{
        assert_eq!(size_of::<$ty>(), $size, concat!("sizeof ", stringify!($ty)));
        assert_eq!(align_of::<$ty>(), $align, concat!("alignof ", stringify!($ty)));
        $(
            assert_eq!(
                offset_of!($ty, $field),
                $off,
                concat!("offsetof ", stringify!($ty), ".", stringify!($field))
            );
        )*
    }};
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod x86_64_linux {
    use super::*;

    #[test]
    fn identifiers() {
        pin!(wsrep_uuid_t, size 16, align 8, data @ 0);
        pin!(wsrep_gtid_t, size 24, align 8, uuid @ 0, seqno @ 16);
        pin!(wsrep_stid_t, size 32, align 8, node @ 0, trx @ 16, conn @ 24);
        pin!(wsrep_trx_meta_t, size 64, align 8, gtid @ 0, stid @ 24, depends_on @ 56);
    }

    #[test]
    fn buffers_handles_keys() {
        pin!(wsrep_buf_t, size 16, align 8, ptr @ 0, len @ 8);
        pin!(wsrep_ws_handle_t, size 16, align 8, trx_id @ 0, opaque @ 8);
        pin!(wsrep_key_t, size 16, align 8, key_parts @ 0, key_parts_num @ 8);
        pin!(wsrep_po_handle_t, size 8, align 8, opaque @ 0);
    }

    #[test]
    fn views() {
        pin!(wsrep_member_info_t, size 304, align 8, id @ 0, name @ 16, incoming @ 48);
        pin!(wsrep_view_info_t, size 360, align 8,
            state_id @ 0, view @ 24, status @ 32, capabilities @ 36,
            my_idx @ 40, memb_num @ 44, proto_ver @ 48, members @ 56);
        assert_eq!(wsrep_view_info_t::size_for(3), 360 + 2 * 304);
    }

    #[test]
    fn init_args() {
        pin!(wsrep_init_args, size 144, align 8,
            app_ctx @ 0, node_name @ 8, node_address @ 16, node_incoming @ 24,
            data_dir @ 32, options @ 40, proto_ver @ 48, state_id @ 56,
            state @ 64, logger_cb @ 72, connected_cb @ 80, view_cb @ 88,
            sst_request_cb @ 96, encrypt_cb @ 104, apply_cb @ 112,
            unordered_cb @ 120, sst_donate_cb @ 128, synced_cb @ 136);
    }

    #[test]
    fn stats_and_encryption() {
        pin!(wsrep_stats_var, size 24, align 8, name @ 0, type_ @ 8, value @ 16);
        pin!(wsrep_stats_value, size 8, align 8);
        pin!(wsrep_enc_ctx_t, size 24, align 8, key @ 0, iv @ 8, ctx @ 16);
        pin!(wsrep_enc_iv_t, size 32, align 1);
        pin!(wsrep_enc_key_t, size 16, align 8);
    }

    #[test]
    fn services() {
        pin!(wsrep_seq_cb_t, size 16, align 8, ctx @ 0, fn_ @ 8);
        pin!(wsrep_allowlist_service_v1_t, size 16, align 8, allowlist_cb @ 0, context @ 8);
        pin!(wsrep_event_service_v1_t, size 16, align 8, event_cb @ 0, context @ 8);
        pin!(wsrep_parameter_t, size 24, align 8, flags @ 0, name @ 8, value @ 16);
        pin!(wsrep_parameter_value, size 8, align 8);
        pin!(wsrep_config_service_v1_t, size 8, align 8, get_parameters @ 0);
    }

    #[test]
    fn enums_are_c_int_sized() {
        pin!(wsrep_status_t, size 4, align 4);
        pin!(wsrep_cb_status_t, size 4, align 4);
        pin!(wsrep_log_level_t, size 4, align 4);
        pin!(wsrep_key_type_t, size 4, align 4);
        pin!(wsrep_data_type_t, size 4, align 4);
        pin!(wsrep_member_status_t, size 4, align 4);
        pin!(wsrep_view_status_t, size 4, align 4);
        pin!(wsrep_var_type_t, size 4, align 4);
        pin!(wsrep_enc_direction_t, size 4, align 4);
        pin!(wsrep_allowlist_key_t, size 4, align 4);
        pin!(wsrep_node_isolation_mode, size 4, align 4);
        pin!(wsrep_node_isolation_result, size 4, align 4);
    }

    #[test]
    fn scalars() {
        pin!(wsrep_bool_t, size 1, align 1);
        pin!(wsrep_cap_t, size 4, align 4);
        pin!(wsrep_seqno_t, size 8, align 8);
        pin!(wsrep_trx_id_t, size 8, align 8);
        pin!(wsrep_conn_id_t, size 8, align 8);
    }

    #[test]
    fn nullable_fn_pointers_are_pointer_sized() {
        pin!(Option<wsrep_log_cb_t>, size 8, align 8);
        pin!(Option<wsrep_apply_cb_t>, size 8, align 8);
        pin!(Option<wsrep_allowlist_cb_t>, size 8, align 8);
        pin!(Option<wsrep_get_parameters_fn>, size 8, align 8);
    }

    #[test]
    fn provider_table_has_45_pointer_slots_in_header_order() {
        let offsets = [
            offset_of!(wsrep_t, version),
            offset_of!(wsrep_t, init),
            offset_of!(wsrep_t, capabilities),
            offset_of!(wsrep_t, options_set),
            offset_of!(wsrep_t, options_get),
            offset_of!(wsrep_t, enc_set_key),
            offset_of!(wsrep_t, connect),
            offset_of!(wsrep_t, disconnect),
            offset_of!(wsrep_t, recv),
            offset_of!(wsrep_t, assign_read_view),
            offset_of!(wsrep_t, certify),
            offset_of!(wsrep_t, commit_order_enter),
            offset_of!(wsrep_t, commit_order_leave),
            offset_of!(wsrep_t, release),
            offset_of!(wsrep_t, replay_trx),
            offset_of!(wsrep_t, abort_certification),
            offset_of!(wsrep_t, rollback),
            offset_of!(wsrep_t, append_key),
            offset_of!(wsrep_t, append_data),
            offset_of!(wsrep_t, sync_wait),
            offset_of!(wsrep_t, last_committed_id),
            offset_of!(wsrep_t, free_connection),
            offset_of!(wsrep_t, to_execute_start),
            offset_of!(wsrep_t, to_execute_end),
            offset_of!(wsrep_t, preordered_collect),
            offset_of!(wsrep_t, preordered_commit),
            offset_of!(wsrep_t, sst_sent),
            offset_of!(wsrep_t, sst_received),
            offset_of!(wsrep_t, snapshot),
            offset_of!(wsrep_t, stats_get),
            offset_of!(wsrep_t, stats_free),
            offset_of!(wsrep_t, stats_reset),
            offset_of!(wsrep_t, pause),
            offset_of!(wsrep_t, resume),
            offset_of!(wsrep_t, desync),
            offset_of!(wsrep_t, resync),
            offset_of!(wsrep_t, lock),
            offset_of!(wsrep_t, unlock),
            offset_of!(wsrep_t, is_locked),
            offset_of!(wsrep_t, provider_name),
            offset_of!(wsrep_t, provider_version),
            offset_of!(wsrep_t, provider_vendor),
            offset_of!(wsrep_t, free),
            offset_of!(wsrep_t, dlh),
            offset_of!(wsrep_t, ctx),
        ];
        assert_eq!(offsets.len(), 45);
        for (index, offset) in offsets.into_iter().enumerate() {
            assert_eq!(offset, index * 8, "wsrep_t field #{}", index + 1);
        }
        pin!(wsrep_t, size 360, align 8, version @ 0, certify @ 80, free @ 336, ctx @ 352);
    }
}

#[test]
fn status_codes() {
    let codes = [
        (wsrep_status_t::OK, 0),
        (wsrep_status_t::WARNING, 1),
        (wsrep_status_t::TRX_MISSING, 2),
        (wsrep_status_t::TRX_FAIL, 3),
        (wsrep_status_t::BF_ABORT, 4),
        (wsrep_status_t::SIZE_EXCEEDED, 5),
        (wsrep_status_t::CONN_FAIL, 6),
        (wsrep_status_t::NODE_FAIL, 7),
        (wsrep_status_t::FATAL, 8),
        (wsrep_status_t::NOT_IMPLEMENTED, 9),
        (wsrep_status_t::NOT_ALLOWED, 10),
    ];
    assert_values(codes.map(|(s, v)| (s.0, v)));
    assert_eq!((wsrep_cb_status_t::SUCCESS.0, wsrep_cb_status_t::FAILURE.0), (0, 1));
}

#[test]
fn small_enums() {
    assert_values([
        (wsrep_log_level_t::FATAL.0, 0),
        (wsrep_log_level_t::ERROR.0, 1),
        (wsrep_log_level_t::WARN.0, 2),
        (wsrep_log_level_t::INFO.0, 3),
        (wsrep_log_level_t::DEBUG.0, 4),
        (wsrep_key_type_t::SHARED.0, 0),
        (wsrep_key_type_t::REFERENCE.0, 1),
        (wsrep_key_type_t::UPDATE.0, 2),
        (wsrep_key_type_t::EXCLUSIVE.0, 3),
        (wsrep_data_type_t::ORDERED.0, 0),
        (wsrep_data_type_t::UNORDERED.0, 1),
        (wsrep_data_type_t::ANNOTATION.0, 2),
        (wsrep_var_type_t::STRING.0, 0),
        (wsrep_var_type_t::INT64.0, 1),
        (wsrep_var_type_t::DOUBLE.0, 2),
        (wsrep_enc_direction_t::ENC.0, 0),
        (wsrep_enc_direction_t::DEC.0, 1),
    ]);
}

#[test]
fn view_and_member_status() {
    assert_values([
        (wsrep_view_status_t::PRIMARY.0, 0),
        (wsrep_view_status_t::NON_PRIMARY.0, 1),
        (wsrep_view_status_t::DISCONNECTED.0, 2),
        (wsrep_view_status_t::MAX.0, 3),
        (wsrep_member_status_t::UNDEFINED.0, 0),
        (wsrep_member_status_t::JOINER.0, 1),
        (wsrep_member_status_t::DONOR.0, 2),
        (wsrep_member_status_t::JOINED.0, 3),
        (wsrep_member_status_t::SYNCED.0, 4),
        (wsrep_member_status_t::ERROR.0, 5),
        (wsrep_member_status_t::MAX.0, 6),
    ]);
}

#[test]
fn service_enums_and_param_flags() {
    assert_values([
        (wsrep_allowlist_key_t::IP.0, 0),
        (wsrep_allowlist_key_t::SSL.0, 1),
        (wsrep_node_isolation_mode::NOT_ISOLATED.0, 0),
        (wsrep_node_isolation_mode::ISOLATED.0, 1),
        (wsrep_node_isolation_mode::FORCE_DISCONNECT.0, 2),
        (wsrep_node_isolation_result::SUCCESS.0, 0),
        (wsrep_node_isolation_result::INVALID_VALUE.0, 1),
        (WSREP_PARAM_DEPRECATED, 0x01),
        (WSREP_PARAM_READONLY, 0x02),
        (WSREP_PARAM_TYPE_BOOL, 0x04),
        (WSREP_PARAM_TYPE_INTEGER, 0x08),
        (WSREP_PARAM_TYPE_DOUBLE, 0x10),
        (WSREP_PARAM_TYPE_MASK, 0x1c),
    ]);
}

#[test]
fn writeset_flags() {
    let flags = [
        WSREP_FLAG_TRX_END,
        WSREP_FLAG_ROLLBACK,
        WSREP_FLAG_ISOLATION,
        WSREP_FLAG_PA_UNSAFE,
        WSREP_FLAG_COMMUTATIVE,
        WSREP_FLAG_NATIVE,
        WSREP_FLAG_TRX_START,
        WSREP_FLAG_TRX_PREPARE,
        WSREP_FLAG_SNAPSHOT,
        WSREP_FLAG_IMPLICIT_DEPS,
    ];
    for (bit, flag) in flags.into_iter().enumerate() {
        assert_eq!(flag, 1 << bit, "flag bit {bit}");
    }
    assert_eq!(WSREP_FLAGS_LAST, 0x200);
    assert_eq!(WSREP_FLAGS_MASK, 0x3ff);
}

#[test]
fn capability_bits() {
    let caps = [
        WSREP_CAP_MULTI_MASTER,
        WSREP_CAP_CERTIFICATION,
        WSREP_CAP_PARALLEL_APPLYING,
        WSREP_CAP_TRX_REPLAY,
        WSREP_CAP_ISOLATION,
        WSREP_CAP_PAUSE,
        WSREP_CAP_CAUSAL_READS,
        WSREP_CAP_CAUSAL_TRX,
        WSREP_CAP_INCREMENTAL_WRITESET,
        WSREP_CAP_SESSION_LOCKS,
        WSREP_CAP_DISTRIBUTED_LOCKS,
        WSREP_CAP_CONSISTENCY_CHECK,
        WSREP_CAP_UNORDERED,
        WSREP_CAP_ANNOTATION,
        WSREP_CAP_PREORDERED,
        WSREP_CAP_STREAMING,
        WSREP_CAP_SNAPSHOT,
        WSREP_CAP_NBO,
    ];
    for (bit, cap) in caps.into_iter().enumerate() {
        assert_eq!(cap, 1 << bit, "capability bit {bit}");
    }
    // The set Galera 26.4.23 advertises (contract 1.2), spelled with our names.
    let galera = WSREP_CAP_MULTI_MASTER
        | WSREP_CAP_CERTIFICATION
        | WSREP_CAP_PARALLEL_APPLYING
        | WSREP_CAP_TRX_REPLAY
        | WSREP_CAP_ISOLATION
        | WSREP_CAP_PAUSE
        | WSREP_CAP_CAUSAL_READS
        | WSREP_CAP_INCREMENTAL_WRITESET
        | WSREP_CAP_UNORDERED
        | WSREP_CAP_PREORDERED
        | WSREP_CAP_STREAMING
        | WSREP_CAP_NBO;
    assert_eq!(galera, 0x2d17f);
}

#[test]
fn scalar_constants_and_strings() {
    assert_eq!(WSREP_SEQNO_UNDEFINED, -1);
    assert_eq!(WSREP_UUID_STR_LEN, 36);
    assert_eq!(WSREP_GTID_STR_LEN, 57);
    assert_eq!(WSREP_MEMBER_NAME_LEN, 32);
    assert_eq!(WSREP_INCOMING_LEN, 256);
    assert_eq!(WSREP_INTERFACE_VERSION.to_bytes(), b"26");
    assert_eq!(WSREP_NONE.to_bytes(), b"none");
    assert_eq!(WSREP_STATE_TRANSFER_TRIVIAL.to_bytes(), b"trivial");
    assert_eq!(WSREP_STATE_TRANSFER_NONE.to_bytes(), b"none");
    assert_eq!(wsrep_gtid_t::UNDEFINED, wsrep_gtid_t::new(wsrep_uuid_t::new([0; 16]), -1));
    assert!(wsrep_po_handle_t::INITIALIZER.opaque.is_null());
}

#[test]
fn symbol_names() {
    let names = [
        (WSREP_LOADER_SYMBOL, "wsrep_loader"),
        (WSREP_INTERFACE_VERSION_SYMBOL, "wsrep_interface_version"),
        (WSREP_CERTIFY_V1, "wsrep_certify_v1"),
        (WSREP_NODE_ISOLATION_MODE_SET_V1, "wsrep_node_isolation_mode_set_v1"),
        (WSREP_ALLOWLIST_SERVICE_INIT_FUNC_V1, "wsrep_init_allowlist_service_v1"),
        (WSREP_ALLOWLIST_SERVICE_DEINIT_FUNC_V1, "wsrep_deinit_allowlist_service_v1"),
        (WSREP_EVENT_SERVICE_INIT_FUNC_V1, "wsrep_init_event_service_v1"),
        (WSREP_EVENT_SERVICE_DEINIT_FUNC_V1, "wsrep_deinit_event_service_v1"),
        (WSREP_CONFIG_SERVICE_INIT_FUNC_V1, "wsrep_init_config_service_v1"),
        (WSREP_CONFIG_SERVICE_DEINIT_FUNC_V1, "wsrep_deinit_config_service_v1"),
        (WSREP_THREAD_SERVICE_INIT_FUNC_V1, "wsrep_init_thread_service_v1"),
        (WSREP_THREAD_SERVICE_DEINIT_FUNC_V1, "wsrep_deinit_thread_service_v1"),
        (WSREP_TLS_SERVICE_INIT_FUNC_V1, "wsrep_init_tls_service_v1"),
        (WSREP_TLS_SERVICE_DEINIT_FUNC_V1, "wsrep_deinit_tls_service_v1"),
    ];
    for (sym, expected) in names {
        assert_eq!(sym.to_str(), Ok(expected));
    }
}

fn assert_values<const N: usize>(pairs: [(c_int, c_int); N]) {
    for (i, (got, want)) in pairs.into_iter().enumerate() {
        assert_eq!(got, want, "entry #{i}");
    }
}

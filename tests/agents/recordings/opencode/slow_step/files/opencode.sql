BEGIN TRANSACTION;
CREATE TABLE `account` (
          `id` text PRIMARY KEY,
          `email` text NOT NULL,
          `url` text NOT NULL,
          `access_token` text NOT NULL,
          `refresh_token` text NOT NULL,
          `token_expiry` integer,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL
        );
CREATE TABLE `account_state` (
          `id` integer PRIMARY KEY,
          `active_account_id` text,
          `active_org_id` text,
          CONSTRAINT `fk_account_state_active_account_id_account_id_fk` FOREIGN KEY (`active_account_id`) REFERENCES `account`(`id`) ON DELETE SET NULL
        );
CREATE TABLE `control_account` (
          `email` text NOT NULL,
          `url` text NOT NULL,
          `access_token` text NOT NULL,
          `refresh_token` text NOT NULL,
          `token_expiry` integer,
          `active` integer NOT NULL,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          CONSTRAINT `control_account_pk` PRIMARY KEY(`email`, `url`)
        );
CREATE TABLE `credential` (
          `id` text PRIMARY KEY,
          `integration_id` text,
          `label` text NOT NULL,
          `value` text NOT NULL,
          `connector_id` text,
          `method_id` text,
          `active` integer,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL
        );
CREATE TABLE `data_migration` (
          `name` text PRIMARY KEY,
          `time_completed` integer NOT NULL
        );
CREATE TABLE `event` (
          `id` text PRIMARY KEY,
          `aggregate_id` text NOT NULL,
          `seq` integer NOT NULL,
          `type` text NOT NULL,
          `data` text NOT NULL,
          CONSTRAINT `fk_event_aggregate_id_event_sequence_aggregate_id_fk` FOREIGN KEY (`aggregate_id`) REFERENCES `event_sequence`(`aggregate_id`) ON DELETE CASCADE
        );
INSERT INTO "event" VALUES('evt_24e6a0a6a001NQR70x07yf5ctI','ses_db195f598ffe0goKmn18rKLkjP',0,'session.created.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","info":{"id":"ses_db195f598ffe0goKmn18rKLkjP","slug":"sunny-circuit","projectID":"c0cf56d18648ca859930f6122d13725063b2e138","directory":"/home/user/project","path":"","cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"title":"New session - 2026-12-07T02:51:42.055Z","version":"1.18.33","time":{"created":1796611902055,"updated":1796611902055},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]}}');
INSERT INTO "event" VALUES('evt_24e6a0b1d001KOvnsdQKkD5Y3b','ses_db195f598ffe0goKmn18rKLkjP',1,'session.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","info":{"id":"ses_db195f598ffe0goKmn18rKLkjP","slug":"sunny-circuit","projectID":"c0cf56d18648ca859930f6122d13725063b2e138","directory":"/home/user/project","path":"","cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"title":"New session - 2026-12-07T02:51:42.055Z","agent":"build","model":{"id":"fake-model","providerID":"fake","variant":"default"},"version":"1.18.33","time":{"created":1796611902055,"updated":1796611902232},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]}}');
INSERT INTO "event" VALUES('evt_24e6a0b2c001loaQQSGoB62iGR','ses_db195f598ffe0goKmn18rKLkjP',2,'message.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","info":{"id":"msg_24e6a0b18001Ynsmr1jsUfQLy5","sessionID":"ses_db195f598ffe0goKmn18rKLkjP","role":"user","time":{"created":1796611902232},"agent":"build","model":{"providerID":"fake","modelID":"fake-model"}}}');
INSERT INTO "event" VALUES('evt_24e6a0b38001ccO1Z1rfpLwxN1','ses_db195f598ffe0goKmn18rKLkjP',3,'message.part.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","part":{"id":"prt_24e6a0b2a001kQYeAbTcZmUr95","sessionID":"ses_db195f598ffe0goKmn18rKLkjP","messageID":"msg_24e6a0b18001Ynsmr1jsUfQLy5","type":"text","text":"Wait eight seconds, then say done."},"time":1796611902263}');
INSERT INTO "event" VALUES('evt_24e6a0b54001wb4OXrxEn4SaUL','ses_db195f598ffe0goKmn18rKLkjP',4,'session.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","info":{"id":"ses_db195f598ffe0goKmn18rKLkjP","slug":"sunny-circuit","projectID":"c0cf56d18648ca859930f6122d13725063b2e138","directory":"/home/user/project","path":"","cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"title":"New session - 2026-12-07T02:51:42.055Z","agent":"build","model":{"id":"fake-model","providerID":"fake","variant":"default"},"version":"1.18.33","time":{"created":1796611902055,"updated":1796611902287},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]}}');
INSERT INTO "event" VALUES('evt_24e6a12cf001A5YT2bqlcCV8xU','ses_db195f598ffe0goKmn18rKLkjP',5,'message.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","info":{"id":"msg_24e6a12cf001D9GuNBOjBITj4N","sessionID":"ses_db195f598ffe0goKmn18rKLkjP","role":"assistant","time":{"created":1796611904207},"parentID":"msg_24e6a0b18001Ynsmr1jsUfQLy5","modelID":"fake-model","providerID":"fake","mode":"build","agent":"build","path":{"cwd":"/home/user/project","root":"/home/user/project"},"cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}}}}');
INSERT INTO "event" VALUES('evt_24e6a13b50012SHp473y9wizgQ','ses_db195f598ffe0goKmn18rKLkjP',6,'session.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","info":{"id":"ses_db195f598ffe0goKmn18rKLkjP","slug":"sunny-circuit","projectID":"c0cf56d18648ca859930f6122d13725063b2e138","directory":"/home/user/project","path":"","cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"title":"Demo project chores","agent":"build","model":{"id":"fake-model","providerID":"fake","variant":"default"},"version":"1.18.33","time":{"created":1796611902055,"updated":1796611902287},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]}}');
INSERT INTO "event" VALUES('evt_24e6a16c30010l6mAu1vzUXmVm','ses_db195f598ffe0goKmn18rKLkjP',7,'session.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","info":{"id":"ses_db195f598ffe0goKmn18rKLkjP","slug":"sunny-circuit","projectID":"c0cf56d18648ca859930f6122d13725063b2e138","directory":"/home/user/project","path":"","summary":{"additions":0,"deletions":0,"files":0},"cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"title":"Demo project chores","agent":"build","model":{"id":"fake-model","providerID":"fake","variant":"default"},"version":"1.18.33","time":{"created":1796611902055,"updated":1796611905217},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]}}');
INSERT INTO "event" VALUES('evt_24e6a16cb001F77zGLeEurjtED','ses_db195f598ffe0goKmn18rKLkjP',8,'message.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","info":{"id":"msg_24e6a0b18001Ynsmr1jsUfQLy5","sessionID":"ses_db195f598ffe0goKmn18rKLkjP","role":"user","time":{"created":1796611902232},"summary":{"diffs":[]},"agent":"build","model":{"providerID":"fake","modelID":"fake-model"}}}');
INSERT INTO "event" VALUES('evt_24e6a1f40001m3o854TvJ47kTQ','ses_db195f598ffe0goKmn18rKLkjP',9,'message.part.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","part":{"id":"prt_24e6a1f40001Oeo1VvHA2ki1p1","sessionID":"ses_db195f598ffe0goKmn18rKLkjP","messageID":"msg_24e6a12cf001D9GuNBOjBITj4N","type":"step-start","snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d"},"time":1796611907392}');
INSERT INTO "event" VALUES('evt_24e6a1f460012bqVAW9b5xlf34','ses_db195f598ffe0goKmn18rKLkjP',10,'message.part.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","part":{"id":"prt_24e6a1f46001gfkQo6VXcJVH18","sessionID":"ses_db195f598ffe0goKmn18rKLkjP","messageID":"msg_24e6a12cf001D9GuNBOjBITj4N","type":"text","text":"","time":{"start":1796611907398}},"time":1796611907398}');
INSERT INTO "event" VALUES('evt_24e6a1f4d001mmwOyBEkVJeP9F','ses_db195f598ffe0goKmn18rKLkjP',11,'message.part.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","part":{"id":"prt_24e6a1f4c00119ssSV130o1JlF","sessionID":"ses_db195f598ffe0goKmn18rKLkjP","messageID":"msg_24e6a12cf001D9GuNBOjBITj4N","type":"tool","callID":"call_000017","tool":"bash","state":{"status":"pending","input":{},"raw":""}},"time":1796611907405}');
INSERT INTO "event" VALUES('evt_24e6a1f5b001z9QKUcGMh5de4I','ses_db195f598ffe0goKmn18rKLkjP',12,'message.part.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","part":{"id":"prt_24e6a1f4c00119ssSV130o1JlF","sessionID":"ses_db195f598ffe0goKmn18rKLkjP","messageID":"msg_24e6a12cf001D9GuNBOjBITj4N","type":"tool","callID":"call_000017","tool":"bash","state":{"status":"running","input":{"command":"sleep 8 && echo slept","description":"Sleeps eight seconds"},"time":{"start":1796611907419}}},"time":1796611907419}');
INSERT INTO "event" VALUES('evt_24e6a1f65001OlruCLFRG3jPns','ses_db195f598ffe0goKmn18rKLkjP',13,'message.part.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","part":{"id":"prt_24e6a1f46001gfkQo6VXcJVH18","sessionID":"ses_db195f598ffe0goKmn18rKLkjP","messageID":"msg_24e6a12cf001D9GuNBOjBITj4N","type":"text","text":"Sleeping now.","time":{"start":1796611907398,"end":1796611907429}},"time":1796611907429}');
INSERT INTO "event" VALUES('evt_24e6a2009001uBVSNKvNwnuUgV','ses_db195f598ffe0goKmn18rKLkjP',14,'message.part.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","part":{"id":"prt_24e6a1f4c00119ssSV130o1JlF","sessionID":"ses_db195f598ffe0goKmn18rKLkjP","messageID":"msg_24e6a12cf001D9GuNBOjBITj4N","type":"tool","callID":"call_000017","tool":"bash","state":{"status":"running","input":{"command":"sleep 8 && echo slept","description":"Sleeps eight seconds"},"metadata":{"output":""},"time":{"start":1796611907419}}},"time":1796611907593}');
INSERT INTO "event" VALUES('evt_24e6a3f960013lfWcZ65o1NwUR','ses_db195f598ffe0goKmn18rKLkjP',15,'message.part.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","part":{"id":"prt_24e6a1f4c00119ssSV130o1JlF","sessionID":"ses_db195f598ffe0goKmn18rKLkjP","messageID":"msg_24e6a12cf001D9GuNBOjBITj4N","type":"tool","callID":"call_000017","tool":"bash","state":{"status":"running","input":{"command":"sleep 8 && echo slept","description":"Sleeps eight seconds"},"metadata":{"output":"slept\n"},"time":{"start":1796611907419}}},"time":1796611915670}');
INSERT INTO "event" VALUES('evt_24e6a3fc30017fxLF8yVyCM23O','ses_db195f598ffe0goKmn18rKLkjP',16,'message.part.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","part":{"id":"prt_24e6a1f4c00119ssSV130o1JlF","sessionID":"ses_db195f598ffe0goKmn18rKLkjP","messageID":"msg_24e6a12cf001D9GuNBOjBITj4N","type":"tool","callID":"call_000017","tool":"bash","state":{"status":"completed","input":{"command":"sleep 8 && echo slept","description":"Sleeps eight seconds"},"output":"slept\n","title":"sleep 8 && echo slept","metadata":{"output":"slept\n","exit":0,"truncated":false},"time":{"start":1796611907419,"end":1796611915715}}},"time":1796611915715}');
INSERT INTO "event" VALUES('evt_24e6a4104001bChdscgOKGBZa6','ses_db195f598ffe0goKmn18rKLkjP',17,'message.part.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","part":{"id":"prt_24e6a4103001QRWYSOGM6Cmgey","sessionID":"ses_db195f598ffe0goKmn18rKLkjP","messageID":"msg_24e6a12cf001D9GuNBOjBITj4N","type":"step-finish","reason":"tool-calls","snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d","cost":0,"tokens":{"total":1060,"input":1020,"output":40,"reasoning":0,"cache":{"read":0,"write":0}}},"time":1796611916036}');
INSERT INTO "event" VALUES('evt_24e6a4110001z2o5mAhP6JKYAM','ses_db195f598ffe0goKmn18rKLkjP',18,'message.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","info":{"id":"msg_24e6a12cf001D9GuNBOjBITj4N","sessionID":"ses_db195f598ffe0goKmn18rKLkjP","role":"assistant","time":{"created":1796611904207},"parentID":"msg_24e6a0b18001Ynsmr1jsUfQLy5","modelID":"fake-model","providerID":"fake","mode":"build","agent":"build","path":{"cwd":"/home/user/project","root":"/home/user/project"},"cost":0,"tokens":{"total":1060,"input":1020,"output":40,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"tool-calls"}}');
INSERT INTO "event" VALUES('evt_24e6a4193001rluvkqHOplPYfF','ses_db195f598ffe0goKmn18rKLkjP',19,'message.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","info":{"id":"msg_24e6a12cf001D9GuNBOjBITj4N","sessionID":"ses_db195f598ffe0goKmn18rKLkjP","role":"assistant","time":{"created":1796611904207,"completed":1796611916178},"parentID":"msg_24e6a0b18001Ynsmr1jsUfQLy5","modelID":"fake-model","providerID":"fake","mode":"build","agent":"build","path":{"cwd":"/home/user/project","root":"/home/user/project"},"cost":0,"tokens":{"total":1060,"input":1020,"output":40,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"tool-calls"}}');
INSERT INTO "event" VALUES('evt_24e6a41b2001dvSS27tq7hqGDh','ses_db195f598ffe0goKmn18rKLkjP',20,'message.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","info":{"id":"msg_24e6a41b1001iK1byXMeXt1QkZ","sessionID":"ses_db195f598ffe0goKmn18rKLkjP","role":"assistant","time":{"created":1796611916209},"parentID":"msg_24e6a0b18001Ynsmr1jsUfQLy5","modelID":"fake-model","providerID":"fake","mode":"build","agent":"build","path":{"cwd":"/home/user/project","root":"/home/user/project"},"cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}}}}');
INSERT INTO "event" VALUES('evt_24e6a41cb001otOA04nBWKETxK','ses_db195f598ffe0goKmn18rKLkjP',21,'session.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","info":{"id":"ses_db195f598ffe0goKmn18rKLkjP","slug":"sunny-circuit","projectID":"c0cf56d18648ca859930f6122d13725063b2e138","directory":"/home/user/project","path":"","summary":{"additions":0,"deletions":0,"files":0},"cost":0,"tokens":{"input":1020,"output":40,"reasoning":0,"cache":{"read":0,"write":0}},"title":"Demo project chores","agent":"build","model":{"id":"fake-model","providerID":"fake","variant":"default"},"version":"1.18.33","time":{"created":1796611902055,"updated":1796611916234},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]}}');
INSERT INTO "event" VALUES('evt_24e6a42ec001XRWr7qS4CW9pfk','ses_db195f598ffe0goKmn18rKLkjP',22,'message.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","info":{"id":"msg_24e6a0b18001Ynsmr1jsUfQLy5","sessionID":"ses_db195f598ffe0goKmn18rKLkjP","role":"user","time":{"created":1796611902232},"summary":{"diffs":[]},"agent":"build","model":{"providerID":"fake","modelID":"fake-model"}}}');
INSERT INTO "event" VALUES('evt_24e6a5643001cxeEpHqRT2i5zK','ses_db195f598ffe0goKmn18rKLkjP',23,'message.part.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","part":{"id":"prt_24e6a5642001k1R3ed0fGdh8cK","sessionID":"ses_db195f598ffe0goKmn18rKLkjP","messageID":"msg_24e6a41b1001iK1byXMeXt1QkZ","type":"step-start","snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d"},"time":1796611921474}');
INSERT INTO "event" VALUES('evt_24e6a564a0013kS2DNpsAlaG92','ses_db195f598ffe0goKmn18rKLkjP',24,'message.part.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","part":{"id":"prt_24e6a564a001Ezb603pGOL1253","sessionID":"ses_db195f598ffe0goKmn18rKLkjP","messageID":"msg_24e6a41b1001iK1byXMeXt1QkZ","type":"text","text":"","time":{"start":1796611921482}},"time":1796611921482}');
INSERT INTO "event" VALUES('evt_24e6a56500012HI4Qwd3uA1Kx0','ses_db195f598ffe0goKmn18rKLkjP',25,'message.part.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","part":{"id":"prt_24e6a564a001Ezb603pGOL1253","sessionID":"ses_db195f598ffe0goKmn18rKLkjP","messageID":"msg_24e6a41b1001iK1byXMeXt1QkZ","type":"text","text":"Done: slept 8 seconds.","time":{"start":1796611921482,"end":1796611921487}},"time":1796611921487}');
INSERT INTO "event" VALUES('evt_24e6a57080014CZ1xqWwyHImM5','ses_db195f598ffe0goKmn18rKLkjP',26,'message.part.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","part":{"id":"prt_24e6a57080014NflLCC5PcN62L","sessionID":"ses_db195f598ffe0goKmn18rKLkjP","messageID":"msg_24e6a41b1001iK1byXMeXt1QkZ","type":"step-finish","reason":"stop","snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d","cost":0,"tokens":{"total":1060,"input":1040,"output":20,"reasoning":0,"cache":{"read":0,"write":0}}},"time":1796611921672}');
INSERT INTO "event" VALUES('evt_24e6a570f001W5mcmWrRgfBB7V','ses_db195f598ffe0goKmn18rKLkjP',27,'message.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","info":{"id":"msg_24e6a41b1001iK1byXMeXt1QkZ","sessionID":"ses_db195f598ffe0goKmn18rKLkjP","role":"assistant","time":{"created":1796611916209},"parentID":"msg_24e6a0b18001Ynsmr1jsUfQLy5","modelID":"fake-model","providerID":"fake","mode":"build","agent":"build","path":{"cwd":"/home/user/project","root":"/home/user/project"},"cost":0,"tokens":{"total":1060,"input":1040,"output":20,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"stop"}}');
INSERT INTO "event" VALUES('evt_24e6a5791001tYm2mgNeYUHxt1','ses_db195f598ffe0goKmn18rKLkjP',28,'message.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","info":{"id":"msg_24e6a41b1001iK1byXMeXt1QkZ","sessionID":"ses_db195f598ffe0goKmn18rKLkjP","role":"assistant","time":{"created":1796611916209,"completed":1796611921809},"parentID":"msg_24e6a0b18001Ynsmr1jsUfQLy5","modelID":"fake-model","providerID":"fake","mode":"build","agent":"build","path":{"cwd":"/home/user/project","root":"/home/user/project"},"cost":0,"tokens":{"total":1060,"input":1040,"output":20,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"stop"}}');
INSERT INTO "event" VALUES('evt_24e6a57ad001Y6bYDVsnagWoZQ','ses_db195f598ffe0goKmn18rKLkjP',29,'session.updated.1','{"sessionID":"ses_db195f598ffe0goKmn18rKLkjP","info":{"id":"ses_db195f598ffe0goKmn18rKLkjP","slug":"sunny-circuit","projectID":"c0cf56d18648ca859930f6122d13725063b2e138","directory":"/home/user/project","path":"","summary":{"additions":0,"deletions":0,"files":0},"cost":0,"tokens":{"input":2060,"output":60,"reasoning":0,"cache":{"read":0,"write":0}},"title":"Demo project chores","agent":"build","model":{"id":"fake-model","providerID":"fake","variant":"default"},"version":"1.18.33","time":{"created":1796611902055,"updated":1796611921835},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]}}');
CREATE TABLE `event_sequence` (
          `aggregate_id` text PRIMARY KEY,
          `seq` integer NOT NULL,
          `owner_id` text
        );
INSERT INTO "event_sequence" VALUES('ses_db195f598ffe0goKmn18rKLkjP',29,NULL);
CREATE TABLE `message` (
          `id` text PRIMARY KEY,
          `session_id` text NOT NULL,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          `data` text NOT NULL,
          CONSTRAINT `fk_message_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE
        );
INSERT INTO "message" VALUES('msg_24e6a0b18001Ynsmr1jsUfQLy5','ses_db195f598ffe0goKmn18rKLkjP',1796611902232,1796611916531,'{"role":"user","time":{"created":1796611902232},"agent":"build","model":{"providerID":"fake","modelID":"fake-model"},"summary":{"diffs":[]}}');
INSERT INTO "message" VALUES('msg_24e6a12cf001D9GuNBOjBITj4N','ses_db195f598ffe0goKmn18rKLkjP',1796611904207,1796611916186,'{"parentID":"msg_24e6a0b18001Ynsmr1jsUfQLy5","role":"assistant","mode":"build","agent":"build","path":{"cwd":"/home/user/project","root":"/home/user/project"},"cost":0,"tokens":{"total":1060,"input":1020,"output":40,"reasoning":0,"cache":{"write":0,"read":0}},"modelID":"fake-model","providerID":"fake","time":{"created":1796611904207,"completed":1796611916178},"finish":"tool-calls"}');
INSERT INTO "message" VALUES('msg_24e6a41b1001iK1byXMeXt1QkZ','ses_db195f598ffe0goKmn18rKLkjP',1796611916209,1796611921811,'{"parentID":"msg_24e6a0b18001Ynsmr1jsUfQLy5","role":"assistant","mode":"build","agent":"build","path":{"cwd":"/home/user/project","root":"/home/user/project"},"cost":0,"tokens":{"total":1060,"input":1040,"output":20,"reasoning":0,"cache":{"write":0,"read":0}},"modelID":"fake-model","providerID":"fake","time":{"created":1796611916209,"completed":1796611921809},"finish":"stop"}');
CREATE TABLE "migration" (id TEXT PRIMARY KEY, time_completed INTEGER NOT NULL);
INSERT INTO "migration" VALUES('20260127222353_familiar_lady_ursula',1796611899850);
INSERT INTO "migration" VALUES('20260211171708_add_project_commands',1796611899851);
INSERT INTO "migration" VALUES('20260213144116_wakeful_the_professor',1796611899851);
INSERT INTO "migration" VALUES('20260225215848_workspace',1796611899851);
INSERT INTO "migration" VALUES('20260227213759_add_session_workspace_id',1796611899851);
INSERT INTO "migration" VALUES('20260228203230_blue_harpoon',1796611899851);
INSERT INTO "migration" VALUES('20260303231226_add_workspace_fields',1796611899851);
INSERT INTO "migration" VALUES('20260309230000_move_org_to_state',1796611899851);
INSERT INTO "migration" VALUES('20260312043431_session_message_cursor',1796611899852);
INSERT INTO "migration" VALUES('20260323234822_events',1796611899852);
INSERT INTO "migration" VALUES('20260410174513_workspace-name',1796611899852);
INSERT INTO "migration" VALUES('20260413175956_chief_energizer',1796611899852);
INSERT INTO "migration" VALUES('20260423070820_add_icon_url_override',1796611899852);
INSERT INTO "migration" VALUES('20260427172553_slow_nightmare',1796611899852);
INSERT INTO "migration" VALUES('20260428004200_add_session_path',1796611899857);
INSERT INTO "migration" VALUES('20260501142318_next_venus',1796611899857);
INSERT INTO "migration" VALUES('20260504145000_add_sync_owner',1796611899858);
INSERT INTO "migration" VALUES('20260507164347_add_workspace_time',1796611899858);
INSERT INTO "migration" VALUES('20260510033149_session_usage',1796611899858);
INSERT INTO "migration" VALUES('20260511000411_data_migration_state',1796611899861);
INSERT INTO "migration" VALUES('20260511173437_session-metadata',1796611899861);
INSERT INTO "migration" VALUES('20260601010001_normalize_storage_paths',1796611899861);
INSERT INTO "migration" VALUES('20260601202201_amazing_prowler',1796611899861);
INSERT INTO "migration" VALUES('20260602002951_lowly_union_jack',1796611899861);
INSERT INTO "migration" VALUES('20260602182828_add_project_directories',1796611899861);
INSERT INTO "migration" VALUES('20260603001617_session_message_projection_indexes',1796611899862);
INSERT INTO "migration" VALUES('20260603040000_session_message_projection_order',1796611899862);
INSERT INTO "migration" VALUES('20260603141458_session_input_inbox',1796611899862);
INSERT INTO "migration" VALUES('20260603160727_jittery_ezekiel_stane',1796611899862);
INSERT INTO "migration" VALUES('20260604172448_event_sourced_session_input',1796611899862);
INSERT INTO "migration" VALUES('20260605003541_add_session_context_snapshot',1796611899862);
INSERT INTO "migration" VALUES('20260605042240_add_context_epoch_agent',1796611899862);
INSERT INTO "migration" VALUES('20260611035744_credential',1796611899863);
INSERT INTO "migration" VALUES('20260611192811_lush_chimera',1796611899863);
INSERT INTO "migration" VALUES('20260612174303_project_dir_strategy',1796611899863);
INSERT INTO "migration" VALUES('20260622142730_simplify_session_context_epoch',1796611899863);
INSERT INTO "migration" VALUES('20260622170816_reset_v2_session_state',1796611899863);
INSERT INTO "migration" VALUES('20260622202450_simplify_session_input',1796611899864);
CREATE TABLE `part` (
          `id` text PRIMARY KEY,
          `message_id` text NOT NULL,
          `session_id` text NOT NULL,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          `data` text NOT NULL,
          CONSTRAINT `fk_part_message_id_message_id_fk` FOREIGN KEY (`message_id`) REFERENCES `message`(`id`) ON DELETE CASCADE
        );
INSERT INTO "part" VALUES('prt_24e6a0b2a001kQYeAbTcZmUr95','msg_24e6a0b18001Ynsmr1jsUfQLy5','ses_db195f598ffe0goKmn18rKLkjP',1796611902263,1796611902271,'{"type":"text","text":"Wait eight seconds, then say done."}');
INSERT INTO "part" VALUES('prt_24e6a1f40001Oeo1VvHA2ki1p1','msg_24e6a12cf001D9GuNBOjBITj4N','ses_db195f598ffe0goKmn18rKLkjP',1796611907392,1796611907395,'{"snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d","type":"step-start"}');
INSERT INTO "part" VALUES('prt_24e6a1f46001gfkQo6VXcJVH18','msg_24e6a12cf001D9GuNBOjBITj4N','ses_db195f598ffe0goKmn18rKLkjP',1796611907398,1796611907431,'{"type":"text","text":"Sleeping now.","time":{"start":1796611907398,"end":1796611907429}}');
INSERT INTO "part" VALUES('prt_24e6a1f4c00119ssSV130o1JlF','msg_24e6a12cf001D9GuNBOjBITj4N','ses_db195f598ffe0goKmn18rKLkjP',1796611907405,1796611915724,'{"type":"tool","tool":"bash","callID":"call_000017","state":{"status":"completed","input":{"command":"sleep 8 && echo slept","description":"Sleeps eight seconds"},"output":"slept\n","metadata":{"output":"slept\n","exit":0,"truncated":false},"title":"sleep 8 && echo slept","time":{"start":1796611907419,"end":1796611915715}}}');
INSERT INTO "part" VALUES('prt_24e6a4103001QRWYSOGM6Cmgey','msg_24e6a12cf001D9GuNBOjBITj4N','ses_db195f598ffe0goKmn18rKLkjP',1796611916036,1796611916044,'{"reason":"tool-calls","snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d","type":"step-finish","tokens":{"total":1060,"input":1020,"output":40,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0}');
INSERT INTO "part" VALUES('prt_24e6a5642001k1R3ed0fGdh8cK','msg_24e6a41b1001iK1byXMeXt1QkZ','ses_db195f598ffe0goKmn18rKLkjP',1796611921474,1796611921479,'{"snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d","type":"step-start"}');
INSERT INTO "part" VALUES('prt_24e6a564a001Ezb603pGOL1253','msg_24e6a41b1001iK1byXMeXt1QkZ','ses_db195f598ffe0goKmn18rKLkjP',1796611921482,1796611921502,'{"type":"text","text":"Done: slept 8 seconds.","time":{"start":1796611921482,"end":1796611921487}}');
INSERT INTO "part" VALUES('prt_24e6a57080014NflLCC5PcN62L','msg_24e6a41b1001iK1byXMeXt1QkZ','ses_db195f598ffe0goKmn18rKLkjP',1796611921672,1796611921677,'{"reason":"stop","snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d","type":"step-finish","tokens":{"total":1060,"input":1040,"output":20,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0}');
CREATE TABLE `permission` (
          `id` text PRIMARY KEY,
          `project_id` text NOT NULL,
          `action` text NOT NULL,
          `resource` text NOT NULL,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          CONSTRAINT `fk_permission_project_id_project_id_fk` FOREIGN KEY (`project_id`) REFERENCES `project`(`id`) ON DELETE CASCADE
        );
CREATE TABLE `project` (
          `id` text PRIMARY KEY,
          `worktree` text NOT NULL,
          `vcs` text,
          `name` text,
          `icon_url` text,
          `icon_url_override` text,
          `icon_color` text,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          `time_initialized` integer,
          `sandboxes` text NOT NULL,
          `commands` text
        );
INSERT INTO "project" VALUES('c0cf56d18648ca859930f6122d13725063b2e138','/home/user/project','git',NULL,NULL,NULL,NULL,1796611900811,1796611900811,NULL,'[]',NULL);
CREATE TABLE `project_directory` (
          `project_id` text NOT NULL,
          `directory` text NOT NULL,
          `type` text,
          `strategy` text,
          `time_created` integer NOT NULL,
          CONSTRAINT `project_directory_pk` PRIMARY KEY(`project_id`, `directory`),
          CONSTRAINT `fk_project_directory_project_id_project_id_fk` FOREIGN KEY (`project_id`) REFERENCES `project`(`id`) ON DELETE CASCADE
        );
INSERT INTO "project_directory" VALUES('c0cf56d18648ca859930f6122d13725063b2e138','/home/user/project',NULL,NULL,1796611900822);
CREATE TABLE `session` (
          `id` text PRIMARY KEY,
          `project_id` text NOT NULL,
          `workspace_id` text,
          `parent_id` text,
          `slug` text NOT NULL,
          `directory` text NOT NULL,
          `path` text,
          `title` text NOT NULL,
          `version` text NOT NULL,
          `share_url` text,
          `summary_additions` integer,
          `summary_deletions` integer,
          `summary_files` integer,
          `summary_diffs` text,
          `metadata` text,
          `cost` real DEFAULT 0 NOT NULL,
          `tokens_input` integer DEFAULT 0 NOT NULL,
          `tokens_output` integer DEFAULT 0 NOT NULL,
          `tokens_reasoning` integer DEFAULT 0 NOT NULL,
          `tokens_cache_read` integer DEFAULT 0 NOT NULL,
          `tokens_cache_write` integer DEFAULT 0 NOT NULL,
          `revert` text,
          `permission` text,
          `agent` text,
          `model` text,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          `time_compacting` integer,
          `time_archived` integer,
          CONSTRAINT `fk_session_project_id_project_id_fk` FOREIGN KEY (`project_id`) REFERENCES `project`(`id`) ON DELETE CASCADE
        );
INSERT INTO "session" VALUES('ses_db195f598ffe0goKmn18rKLkjP','c0cf56d18648ca859930f6122d13725063b2e138',NULL,NULL,'sunny-circuit','/home/user/project','','Demo project chores','1.18.33',NULL,0,0,0,NULL,NULL,0.0,2060,60,0,0,0,NULL,'[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]','build','{"id":"fake-model","providerID":"fake","variant":"default"}',1796611902055,1796611921835,NULL,NULL);
CREATE TABLE `session_context_epoch` (
          `session_id` text PRIMARY KEY,
          `baseline` text NOT NULL,
          `snapshot` text NOT NULL,
          `baseline_seq` integer NOT NULL,
          CONSTRAINT `fk_session_context_epoch_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE
        );
CREATE TABLE `session_input` (
          `id` text PRIMARY KEY,
          `session_id` text NOT NULL,
          `prompt` text NOT NULL,
          `delivery` text NOT NULL,
          `admitted_seq` integer NOT NULL,
          `promoted_seq` integer,
          `time_created` integer NOT NULL,
          CONSTRAINT `fk_session_input_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE
        );
CREATE TABLE `session_message` (
          `id` text PRIMARY KEY,
          `session_id` text NOT NULL,
          `type` text NOT NULL,
          `seq` integer NOT NULL,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          `data` text NOT NULL,
          CONSTRAINT `fk_session_message_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE
        );
CREATE TABLE `session_share` (
          `session_id` text PRIMARY KEY,
          `id` text NOT NULL,
          `secret` text NOT NULL,
          `url` text NOT NULL,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          CONSTRAINT `fk_session_share_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE
        );
CREATE TABLE `todo` (
          `session_id` text NOT NULL,
          `content` text NOT NULL,
          `status` text NOT NULL,
          `priority` text NOT NULL,
          `position` integer NOT NULL,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          CONSTRAINT `todo_pk` PRIMARY KEY(`session_id`, `position`),
          CONSTRAINT `fk_todo_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE
        );
CREATE TABLE `workspace` (
          `id` text PRIMARY KEY,
          `type` text NOT NULL,
          `name` text DEFAULT '' NOT NULL,
          `branch` text,
          `directory` text,
          `extra` text,
          `project_id` text NOT NULL,
          `time_used` integer NOT NULL,
          CONSTRAINT `fk_workspace_project_id_project_id_fk` FOREIGN KEY (`project_id`) REFERENCES `project`(`id`) ON DELETE CASCADE
        );
CREATE UNIQUE INDEX `event_aggregate_seq_idx` ON `event` (`aggregate_id`,`seq`);
CREATE INDEX `event_aggregate_type_seq_idx` ON `event` (`aggregate_id`,`type`,`seq`);
CREATE UNIQUE INDEX `permission_project_action_resource_idx` ON `permission` (`project_id`,`action`,`resource`);
CREATE INDEX `message_session_time_created_id_idx` ON `message` (`session_id`,`time_created`,`id`);
CREATE INDEX `part_message_id_id_idx` ON `part` (`message_id`,`id`);
CREATE INDEX `part_session_idx` ON `part` (`session_id`);
CREATE INDEX `session_input_session_pending_delivery_seq_idx` ON `session_input` (`session_id`,`promoted_seq`,`delivery`,`admitted_seq`);
CREATE UNIQUE INDEX `session_input_session_admitted_seq_idx` ON `session_input` (`session_id`,`admitted_seq`);
CREATE UNIQUE INDEX `session_input_session_promoted_seq_idx` ON `session_input` (`session_id`,`promoted_seq`);
CREATE UNIQUE INDEX `session_message_session_seq_idx` ON `session_message` (`session_id`,`seq`);
CREATE INDEX `session_message_session_type_seq_idx` ON `session_message` (`session_id`,`type`,`seq`);
CREATE INDEX `session_message_session_time_created_id_idx` ON `session_message` (`session_id`,`time_created`,`id`);
CREATE INDEX `session_message_time_created_idx` ON `session_message` (`time_created`);
CREATE INDEX `session_project_idx` ON `session` (`project_id`);
CREATE INDEX `session_workspace_idx` ON `session` (`workspace_id`);
CREATE INDEX `session_parent_idx` ON `session` (`parent_id`);
CREATE INDEX `todo_session_idx` ON `todo` (`session_id`);
COMMIT;

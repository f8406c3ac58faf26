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
INSERT INTO "event" VALUES('evt_24e6a72130012bRSB1KCI5U5a5','ses_db1958deeffe24Ns5674zanRmK',0,'session.created.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","info":{"id":"ses_db1958deeffe24Ns5674zanRmK","slug":"quick-eagle","projectID":"c0cf56d18648ca859930f6122d13725063b2e138","directory":"/home/user/project","path":"","cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"title":"New session - 2026-12-07T02:52:08.593Z","version":"1.18.33","time":{"created":1796611928593,"updated":1796611928593},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]}}');
INSERT INTO "event" VALUES('evt_24e6a72e9001zK1r0LplhGxmu3','ses_db1958deeffe24Ns5674zanRmK',1,'session.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","info":{"id":"ses_db1958deeffe24Ns5674zanRmK","slug":"quick-eagle","projectID":"c0cf56d18648ca859930f6122d13725063b2e138","directory":"/home/user/project","path":"","cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"title":"New session - 2026-12-07T02:52:08.593Z","agent":"build","model":{"id":"fake-model","providerID":"fake","variant":"default"},"version":"1.18.33","time":{"created":1796611928593,"updated":1796611928807},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]}}');
INSERT INTO "event" VALUES('evt_24e6a72f2001P8K0GZRIaVMeB5','ses_db1958deeffe24Ns5674zanRmK',2,'message.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","info":{"id":"msg_24e6a72e7001H2FThrK8gZ6s82","sessionID":"ses_db1958deeffe24Ns5674zanRmK","role":"user","time":{"created":1796611928807},"agent":"build","model":{"providerID":"fake","modelID":"fake-model"}}}');
INSERT INTO "event" VALUES('evt_24e6a72f800105fh8tuQQiv1i6','ses_db1958deeffe24Ns5674zanRmK',3,'message.part.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","part":{"id":"prt_24e6a72ef0012PZm3HgxuTUcGR","sessionID":"ses_db1958deeffe24Ns5674zanRmK","messageID":"msg_24e6a72e7001H2FThrK8gZ6s82","type":"text","text":"Ask a helper agent to count the lines of calc.py, then report."},"time":1796611928824}');
INSERT INTO "event" VALUES('evt_24e6a72ff0013YkdvYgAstFiyS','ses_db1958deeffe24Ns5674zanRmK',4,'session.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","info":{"id":"ses_db1958deeffe24Ns5674zanRmK","slug":"quick-eagle","projectID":"c0cf56d18648ca859930f6122d13725063b2e138","directory":"/home/user/project","path":"","cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"title":"New session - 2026-12-07T02:52:08.593Z","agent":"build","model":{"id":"fake-model","providerID":"fake","variant":"default"},"version":"1.18.33","time":{"created":1796611928593,"updated":1796611928829},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]}}');
INSERT INTO "event" VALUES('evt_24e6a7a7b001Abtn06r4IOprLz','ses_db1958deeffe24Ns5674zanRmK',5,'message.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","info":{"id":"msg_24e6a7a7b001IIBJdPDkrh36vg","sessionID":"ses_db1958deeffe24Ns5674zanRmK","role":"assistant","time":{"created":1796611930747},"parentID":"msg_24e6a72e7001H2FThrK8gZ6s82","modelID":"fake-model","providerID":"fake","mode":"build","agent":"build","path":{"cwd":"/home/user/project","root":"/home/user/project"},"cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}}}}');
INSERT INTO "event" VALUES('evt_24e6a7b53001iJw9lL8yioxixF','ses_db1958deeffe24Ns5674zanRmK',6,'session.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","info":{"id":"ses_db1958deeffe24Ns5674zanRmK","slug":"quick-eagle","projectID":"c0cf56d18648ca859930f6122d13725063b2e138","directory":"/home/user/project","path":"","cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"title":"Demo project chores","agent":"build","model":{"id":"fake-model","providerID":"fake","variant":"default"},"version":"1.18.33","time":{"created":1796611928593,"updated":1796611928829},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]}}');
INSERT INTO "event" VALUES('evt_24e6a7d6c001Q4osscPxcNrJY2','ses_db1958deeffe24Ns5674zanRmK',7,'session.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","info":{"id":"ses_db1958deeffe24Ns5674zanRmK","slug":"quick-eagle","projectID":"c0cf56d18648ca859930f6122d13725063b2e138","directory":"/home/user/project","path":"","summary":{"additions":0,"deletions":0,"files":0},"cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"title":"Demo project chores","agent":"build","model":{"id":"fake-model","providerID":"fake","variant":"default"},"version":"1.18.33","time":{"created":1796611928593,"updated":1796611931498},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]}}');
INSERT INTO "event" VALUES('evt_24e6a7d730011EazL5lBKzv4GO','ses_db1958deeffe24Ns5674zanRmK',8,'message.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","info":{"id":"msg_24e6a72e7001H2FThrK8gZ6s82","sessionID":"ses_db1958deeffe24Ns5674zanRmK","role":"user","time":{"created":1796611928807},"summary":{"diffs":[]},"agent":"build","model":{"providerID":"fake","modelID":"fake-model"}}}');
INSERT INTO "event" VALUES('evt_24e6a8ab0001TcGs8PF1iqoP5o','ses_db1958deeffe24Ns5674zanRmK',9,'message.part.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","part":{"id":"prt_24e6a8aaf001IbNEU6H07JnPnH","sessionID":"ses_db1958deeffe24Ns5674zanRmK","messageID":"msg_24e6a7a7b001IIBJdPDkrh36vg","type":"step-start","snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d"},"time":1796611934895}');
INSERT INTO "event" VALUES('evt_24e6a8ab7001zMuIkuJVoi2V73','ses_db1958deeffe24Ns5674zanRmK',10,'message.part.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","part":{"id":"prt_24e6a8ab600147ULFCLrKV92uK","sessionID":"ses_db1958deeffe24Ns5674zanRmK","messageID":"msg_24e6a7a7b001IIBJdPDkrh36vg","type":"text","text":"","time":{"start":1796611934903}},"time":1796611934903}');
INSERT INTO "event" VALUES('evt_24e6a8ace001eM180pkt3MWLCq','ses_db1958deeffe24Ns5674zanRmK',11,'message.part.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","part":{"id":"prt_24e6a8ace001O0erVICRoAP1St","sessionID":"ses_db1958deeffe24Ns5674zanRmK","messageID":"msg_24e6a7a7b001IIBJdPDkrh36vg","type":"tool","callID":"call_000021","tool":"task","state":{"status":"pending","input":{},"raw":""}},"time":1796611934926}');
INSERT INTO "event" VALUES('evt_24e6a8b0c001Xnb3thtpLidp7x','ses_db19574fbffeyYZFTHInOaHgJc',0,'session.created.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","info":{"id":"ses_db19574fbffeyYZFTHInOaHgJc","slug":"nimble-harbor","projectID":"c0cf56d18648ca859930f6122d13725063b2e138","directory":"/home/user/project","path":"","parentID":"ses_db1958deeffe24Ns5674zanRmK","cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"title":"Count calc.py lines (@general subagent)","agent":"general","version":"1.18.33","time":{"created":1796611934980,"updated":1796611934980},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"},{"permission":"task","pattern":"*","action":"deny"}]}}');
INSERT INTO "event" VALUES('evt_24e6a8b29001MsphunPWyi7f1Y','ses_db1958deeffe24Ns5674zanRmK',12,'message.part.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","part":{"id":"prt_24e6a8ace001O0erVICRoAP1St","sessionID":"ses_db1958deeffe24Ns5674zanRmK","messageID":"msg_24e6a7a7b001IIBJdPDkrh36vg","type":"tool","callID":"call_000021","tool":"task","state":{"status":"running","input":{"description":"Count calc.py lines","subagent_type":"general","prompt":"Count the lines of calc.py and answer with the number."},"title":"Count calc.py lines","metadata":{"parentSessionId":"ses_db1958deeffe24Ns5674zanRmK","sessionId":"ses_db19574fbffeyYZFTHInOaHgJc","model":{"modelID":"fake-model","providerID":"fake"}},"time":{"start":1796611935016}}},"time":1796611935017}');
INSERT INTO "event" VALUES('evt_24e6a8b61001f4jfn7v0v1pgBH','ses_db19574fbffeyYZFTHInOaHgJc',1,'session.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","info":{"id":"ses_db19574fbffeyYZFTHInOaHgJc","slug":"nimble-harbor","projectID":"c0cf56d18648ca859930f6122d13725063b2e138","directory":"/home/user/project","path":"","parentID":"ses_db1958deeffe24Ns5674zanRmK","cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"title":"Count calc.py lines (@general subagent)","agent":"general","model":{"id":"fake-model","providerID":"fake","variant":"default"},"version":"1.18.33","time":{"created":1796611934980,"updated":1796611935062},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"},{"permission":"task","pattern":"*","action":"deny"}]}}');
INSERT INTO "event" VALUES('evt_24e6a8b71001JZsTHnQ5KxiGlj','ses_db19574fbffeyYZFTHInOaHgJc',2,'message.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","info":{"id":"msg_24e6a8b540014ZwVywHMEUoj8T","sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","role":"user","time":{"created":1796611935062},"agent":"general","model":{"providerID":"fake","modelID":"fake-model"}}}');
INSERT INTO "event" VALUES('evt_24e6a8b7f0013vBzVTysX3Kwqo','ses_db19574fbffeyYZFTHInOaHgJc',3,'message.part.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","part":{"id":"prt_24e6a8b6e001Qp5O7L65ouRjrt","sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","messageID":"msg_24e6a8b540014ZwVywHMEUoj8T","type":"text","text":"Count the lines of calc.py and answer with the number."},"time":1796611935103}');
INSERT INTO "event" VALUES('evt_24e6a8b940013Q7B6Mqy5RIxlC','ses_db19574fbffeyYZFTHInOaHgJc',4,'session.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","info":{"id":"ses_db19574fbffeyYZFTHInOaHgJc","slug":"nimble-harbor","projectID":"c0cf56d18648ca859930f6122d13725063b2e138","directory":"/home/user/project","path":"","parentID":"ses_db1958deeffe24Ns5674zanRmK","cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"title":"Count calc.py lines (@general subagent)","agent":"general","model":{"id":"fake-model","providerID":"fake","variant":"default"},"version":"1.18.33","time":{"created":1796611934980,"updated":1796611935121},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"},{"permission":"task","pattern":"*","action":"deny"}]}}');
INSERT INTO "event" VALUES('evt_24e6a8bb6001AE68zzWXEDG970','ses_db1958deeffe24Ns5674zanRmK',13,'message.part.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","part":{"id":"prt_24e6a8ace001O0erVICRoAP1St","sessionID":"ses_db1958deeffe24Ns5674zanRmK","messageID":"msg_24e6a7a7b001IIBJdPDkrh36vg","type":"tool","callID":"call_000021","tool":"task","state":{"status":"running","input":{"description":"Count calc.py lines","subagent_type":"general","prompt":"Count the lines of calc.py and answer with the number."},"title":"Count calc.py lines","metadata":{"parentSessionId":"ses_db1958deeffe24Ns5674zanRmK","sessionId":"ses_db19574fbffeyYZFTHInOaHgJc","model":{"modelID":"fake-model","providerID":"fake"}},"time":{"start":1796611935016}}},"time":1796611935158}');
INSERT INTO "event" VALUES('evt_24e6a8bca0014nb7GglR5Kxwdk','ses_db1958deeffe24Ns5674zanRmK',14,'message.part.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","part":{"id":"prt_24e6a8ab600147ULFCLrKV92uK","sessionID":"ses_db1958deeffe24Ns5674zanRmK","messageID":"msg_24e6a7a7b001IIBJdPDkrh36vg","type":"text","text":"I''ll hand this to a helper.","time":{"start":1796611934903,"end":1796611935177}},"time":1796611935177}');
INSERT INTO "event" VALUES('evt_24e6a8bf3001Vzvc6W9u3UqBl4','ses_db19574fbffeyYZFTHInOaHgJc',5,'message.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","info":{"id":"msg_24e6a8bf2001nxf5vMKK8hceKt","sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","role":"assistant","time":{"created":1796611935218},"parentID":"msg_24e6a8b540014ZwVywHMEUoj8T","modelID":"fake-model","providerID":"fake","mode":"general","agent":"general","path":{"cwd":"/home/user/project","root":"/home/user/project"},"cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}}}}');
INSERT INTO "event" VALUES('evt_24e6a8d770012ofoBzBLweaEIz','ses_db19574fbffeyYZFTHInOaHgJc',6,'message.part.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","part":{"id":"prt_24e6a8d77001jTBtvxFa3FU50r","sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","messageID":"msg_24e6a8bf2001nxf5vMKK8hceKt","type":"step-start","snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d"},"time":1796611935607}');
INSERT INTO "event" VALUES('evt_24e6a8d7f001KtRH3OLWinPCTz','ses_db19574fbffeyYZFTHInOaHgJc',7,'message.part.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","part":{"id":"prt_24e6a8d7f0017nftIFdkkk2X7V","sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","messageID":"msg_24e6a8bf2001nxf5vMKK8hceKt","type":"tool","callID":"call_000023","tool":"bash","state":{"status":"pending","input":{},"raw":""}},"time":1796611935615}');
INSERT INTO "event" VALUES('evt_24e6a8da4001Blh0TCik95GtDi','ses_db19574fbffeyYZFTHInOaHgJc',8,'message.part.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","part":{"id":"prt_24e6a8d7f0017nftIFdkkk2X7V","sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","messageID":"msg_24e6a8bf2001nxf5vMKK8hceKt","type":"tool","callID":"call_000023","tool":"bash","state":{"status":"running","input":{"command":"wc -l calc.py","description":"Counts lines"},"time":{"start":1796611935651}}},"time":1796611935652}');
INSERT INTO "event" VALUES('evt_24e6a8de1001foljkpUS79L71U','ses_db19574fbffeyYZFTHInOaHgJc',9,'session.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","info":{"id":"ses_db19574fbffeyYZFTHInOaHgJc","slug":"nimble-harbor","projectID":"c0cf56d18648ca859930f6122d13725063b2e138","directory":"/home/user/project","path":"","parentID":"ses_db1958deeffe24Ns5674zanRmK","summary":{"additions":0,"deletions":0,"files":0},"cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"title":"Count calc.py lines (@general subagent)","agent":"general","model":{"id":"fake-model","providerID":"fake","variant":"default"},"version":"1.18.33","time":{"created":1796611934980,"updated":1796611935691},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"},{"permission":"task","pattern":"*","action":"deny"}]}}');
INSERT INTO "event" VALUES('evt_24e6a8e0c001uL4KumB3qkmXo5','ses_db19574fbffeyYZFTHInOaHgJc',10,'message.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","info":{"id":"msg_24e6a8b540014ZwVywHMEUoj8T","sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","role":"user","time":{"created":1796611935062},"summary":{"diffs":[]},"agent":"general","model":{"providerID":"fake","modelID":"fake-model"}}}');
INSERT INTO "event" VALUES('evt_24e6a8f74001XRrGGbPc7NuH3p','ses_db19574fbffeyYZFTHInOaHgJc',11,'message.part.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","part":{"id":"prt_24e6a8d7f0017nftIFdkkk2X7V","sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","messageID":"msg_24e6a8bf2001nxf5vMKK8hceKt","type":"tool","callID":"call_000023","tool":"bash","state":{"status":"running","input":{"command":"wc -l calc.py","description":"Counts lines"},"metadata":{"output":""},"time":{"start":1796611935651}}},"time":1796611936116}');
INSERT INTO "event" VALUES('evt_24e6a8fb80018w1VPPTBJXtQzL','ses_db19574fbffeyYZFTHInOaHgJc',12,'message.part.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","part":{"id":"prt_24e6a8d7f0017nftIFdkkk2X7V","sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","messageID":"msg_24e6a8bf2001nxf5vMKK8hceKt","type":"tool","callID":"call_000023","tool":"bash","state":{"status":"running","input":{"command":"wc -l calc.py","description":"Counts lines"},"metadata":{"output":"6 calc.py\n"},"time":{"start":1796611935651}}},"time":1796611936184}');
INSERT INTO "event" VALUES('evt_24e6a8fc9001zv7HLG2O340NHk','ses_db19574fbffeyYZFTHInOaHgJc',13,'message.part.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","part":{"id":"prt_24e6a8d7f0017nftIFdkkk2X7V","sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","messageID":"msg_24e6a8bf2001nxf5vMKK8hceKt","type":"tool","callID":"call_000023","tool":"bash","state":{"status":"completed","input":{"command":"wc -l calc.py","description":"Counts lines"},"output":"6 calc.py\n","title":"wc -l calc.py","metadata":{"output":"6 calc.py\n","exit":0,"truncated":false},"time":{"start":1796611935651,"end":1796611936200}}},"time":1796611936200}');
INSERT INTO "event" VALUES('evt_24e6a9214001YITtzOa21Ub6Nk','ses_db19574fbffeyYZFTHInOaHgJc',14,'message.part.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","part":{"id":"prt_24e6a9213001H7oGBiUWn7zucE","sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","messageID":"msg_24e6a8bf2001nxf5vMKK8hceKt","type":"step-finish","reason":"tool-calls","snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d","cost":0,"tokens":{"total":1040,"input":1020,"output":20,"reasoning":0,"cache":{"read":0,"write":0}}},"time":1796611936788}');
INSERT INTO "event" VALUES('evt_24e6a9218001vf7GNG0F3fiJbh','ses_db19574fbffeyYZFTHInOaHgJc',15,'message.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","info":{"id":"msg_24e6a8bf2001nxf5vMKK8hceKt","sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","role":"assistant","time":{"created":1796611935218},"parentID":"msg_24e6a8b540014ZwVywHMEUoj8T","modelID":"fake-model","providerID":"fake","mode":"general","agent":"general","path":{"cwd":"/home/user/project","root":"/home/user/project"},"cost":0,"tokens":{"total":1040,"input":1020,"output":20,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"tool-calls"}}');
INSERT INTO "event" VALUES('evt_24e6a9359001UTv23Xnl1IVP6h','ses_db19574fbffeyYZFTHInOaHgJc',16,'message.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","info":{"id":"msg_24e6a8bf2001nxf5vMKK8hceKt","sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","role":"assistant","time":{"created":1796611935218,"completed":1796611937112},"parentID":"msg_24e6a8b540014ZwVywHMEUoj8T","modelID":"fake-model","providerID":"fake","mode":"general","agent":"general","path":{"cwd":"/home/user/project","root":"/home/user/project"},"cost":0,"tokens":{"total":1040,"input":1020,"output":20,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"tool-calls"}}');
INSERT INTO "event" VALUES('evt_24e6a9363001iPRA8IYHrBm8RI','ses_db19574fbffeyYZFTHInOaHgJc',17,'message.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","info":{"id":"msg_24e6a9363001qL4p3rqCPOQAK4","sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","role":"assistant","time":{"created":1796611937123},"parentID":"msg_24e6a8b540014ZwVywHMEUoj8T","modelID":"fake-model","providerID":"fake","mode":"general","agent":"general","path":{"cwd":"/home/user/project","root":"/home/user/project"},"cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}}}}');
INSERT INTO "event" VALUES('evt_24e6a937b0016jEEProyeP9xuI','ses_db19574fbffeyYZFTHInOaHgJc',18,'session.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","info":{"id":"ses_db19574fbffeyYZFTHInOaHgJc","slug":"nimble-harbor","projectID":"c0cf56d18648ca859930f6122d13725063b2e138","directory":"/home/user/project","path":"","parentID":"ses_db1958deeffe24Ns5674zanRmK","summary":{"additions":0,"deletions":0,"files":0},"cost":0,"tokens":{"input":1020,"output":20,"reasoning":0,"cache":{"read":0,"write":0}},"title":"Count calc.py lines (@general subagent)","agent":"general","model":{"id":"fake-model","providerID":"fake","variant":"default"},"version":"1.18.33","time":{"created":1796611934980,"updated":1796611937143},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"},{"permission":"task","pattern":"*","action":"deny"}]}}');
INSERT INTO "event" VALUES('evt_24e6a9473001xN6HA7S2Dtoupy','ses_db19574fbffeyYZFTHInOaHgJc',19,'message.part.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","part":{"id":"prt_24e6a9473001Q68053DFQCIpax","sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","messageID":"msg_24e6a9363001qL4p3rqCPOQAK4","type":"step-start","snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d"},"time":1796611937395}');
INSERT INTO "event" VALUES('evt_24e6a947a001xNsZZmd7n0Af0j','ses_db19574fbffeyYZFTHInOaHgJc',20,'message.part.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","part":{"id":"prt_24e6a947a0017x6e1W225TgDYP","sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","messageID":"msg_24e6a9363001qL4p3rqCPOQAK4","type":"text","text":"","time":{"start":1796611937402}},"time":1796611937402}');
INSERT INTO "event" VALUES('evt_24e6a947f001eIA2Zvxvrm9jkc','ses_db19574fbffeyYZFTHInOaHgJc',21,'message.part.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","part":{"id":"prt_24e6a947a0017x6e1W225TgDYP","sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","messageID":"msg_24e6a9363001qL4p3rqCPOQAK4","type":"text","text":"6","time":{"start":1796611937402,"end":1796611937407}},"time":1796611937407}');
INSERT INTO "event" VALUES('evt_24e6a94b1001s6ou4zJ6F8feWq','ses_db19574fbffeyYZFTHInOaHgJc',22,'message.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","info":{"id":"msg_24e6a8b540014ZwVywHMEUoj8T","sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","role":"user","time":{"created":1796611935062},"summary":{"diffs":[]},"agent":"general","model":{"providerID":"fake","modelID":"fake-model"}}}');
INSERT INTO "event" VALUES('evt_24e6a9567001jrtLD7la2QH3t9','ses_db19574fbffeyYZFTHInOaHgJc',23,'message.part.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","part":{"id":"prt_24e6a95670015kBxKYCkaoax9z","sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","messageID":"msg_24e6a9363001qL4p3rqCPOQAK4","type":"step-finish","reason":"stop","snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d","cost":0,"tokens":{"total":1060,"input":1040,"output":20,"reasoning":0,"cache":{"read":0,"write":0}}},"time":1796611937639}');
INSERT INTO "event" VALUES('evt_24e6a956c001797s7UR0EURMEr','ses_db19574fbffeyYZFTHInOaHgJc',24,'message.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","info":{"id":"msg_24e6a9363001qL4p3rqCPOQAK4","sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","role":"assistant","time":{"created":1796611937123},"parentID":"msg_24e6a8b540014ZwVywHMEUoj8T","modelID":"fake-model","providerID":"fake","mode":"general","agent":"general","path":{"cwd":"/home/user/project","root":"/home/user/project"},"cost":0,"tokens":{"total":1060,"input":1040,"output":20,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"stop"}}');
INSERT INTO "event" VALUES('evt_24e6a96b2001ZLURJC7peLpJd8','ses_db19574fbffeyYZFTHInOaHgJc',25,'message.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","info":{"id":"msg_24e6a9363001qL4p3rqCPOQAK4","sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","role":"assistant","time":{"created":1796611937123,"completed":1796611937970},"parentID":"msg_24e6a8b540014ZwVywHMEUoj8T","modelID":"fake-model","providerID":"fake","mode":"general","agent":"general","path":{"cwd":"/home/user/project","root":"/home/user/project"},"cost":0,"tokens":{"total":1060,"input":1040,"output":20,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"stop"}}');
INSERT INTO "event" VALUES('evt_24e6a96d0001bWJASJX2g8ryew','ses_db1958deeffe24Ns5674zanRmK',15,'message.part.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","part":{"id":"prt_24e6a8ace001O0erVICRoAP1St","sessionID":"ses_db1958deeffe24Ns5674zanRmK","messageID":"msg_24e6a7a7b001IIBJdPDkrh36vg","type":"tool","callID":"call_000021","tool":"task","state":{"status":"completed","input":{"description":"Count calc.py lines","subagent_type":"general","prompt":"Count the lines of calc.py and answer with the number."},"output":"<task id=\"ses_db19574fbffeyYZFTHInOaHgJc\" state=\"completed\">\n<task_result>\n6\n</task_result>\n</task>","title":"Count calc.py lines","metadata":{"parentSessionId":"ses_db1958deeffe24Ns5674zanRmK","sessionId":"ses_db19574fbffeyYZFTHInOaHgJc","model":{"modelID":"fake-model","providerID":"fake"},"truncated":false},"time":{"start":1796611935016,"end":1796611937999}}},"time":1796611938000}');
INSERT INTO "event" VALUES('evt_24e6a9711001ORgYNk440CIo9A','ses_db19574fbffeyYZFTHInOaHgJc',26,'session.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","info":{"id":"ses_db19574fbffeyYZFTHInOaHgJc","slug":"nimble-harbor","projectID":"c0cf56d18648ca859930f6122d13725063b2e138","directory":"/home/user/project","path":"","parentID":"ses_db1958deeffe24Ns5674zanRmK","summary":{"additions":0,"deletions":0,"files":0},"cost":0,"tokens":{"input":2060,"output":40,"reasoning":0,"cache":{"read":0,"write":0}},"title":"Count calc.py lines (@general subagent)","agent":"general","model":{"id":"fake-model","providerID":"fake","variant":"default"},"version":"1.18.33","time":{"created":1796611934980,"updated":1796611938060},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"},{"permission":"task","pattern":"*","action":"deny"}]}}');
INSERT INTO "event" VALUES('evt_24e6a98e8001XtzDxXvmSk6trR','ses_db1958deeffe24Ns5674zanRmK',16,'message.part.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","part":{"id":"prt_24e6a98e80014yhzj1GQz9A34E","sessionID":"ses_db1958deeffe24Ns5674zanRmK","messageID":"msg_24e6a7a7b001IIBJdPDkrh36vg","type":"step-finish","reason":"tool-calls","snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d","cost":0,"tokens":{"total":1060,"input":1020,"output":40,"reasoning":0,"cache":{"read":0,"write":0}}},"time":1796611938536}');
INSERT INTO "event" VALUES('evt_24e6a98f9001WbAkXtqGzPzjts','ses_db1958deeffe24Ns5674zanRmK',17,'message.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","info":{"id":"msg_24e6a7a7b001IIBJdPDkrh36vg","sessionID":"ses_db1958deeffe24Ns5674zanRmK","role":"assistant","time":{"created":1796611930747},"parentID":"msg_24e6a72e7001H2FThrK8gZ6s82","modelID":"fake-model","providerID":"fake","mode":"build","agent":"build","path":{"cwd":"/home/user/project","root":"/home/user/project"},"cost":0,"tokens":{"total":1060,"input":1020,"output":40,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"tool-calls"}}');
INSERT INTO "event" VALUES('evt_24e6a9a7b001IwmAUOPi7dn70F','ses_db1958deeffe24Ns5674zanRmK',18,'message.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","info":{"id":"msg_24e6a7a7b001IIBJdPDkrh36vg","sessionID":"ses_db1958deeffe24Ns5674zanRmK","role":"assistant","time":{"created":1796611930747,"completed":1796611938939},"parentID":"msg_24e6a72e7001H2FThrK8gZ6s82","modelID":"fake-model","providerID":"fake","mode":"build","agent":"build","path":{"cwd":"/home/user/project","root":"/home/user/project"},"cost":0,"tokens":{"total":1060,"input":1020,"output":40,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"tool-calls"}}');
INSERT INTO "event" VALUES('evt_24e6a9a89001JHZv06sQB4DuTO','ses_db1958deeffe24Ns5674zanRmK',19,'message.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","info":{"id":"msg_24e6a9a88001sBr5UqR55f01qS","sessionID":"ses_db1958deeffe24Ns5674zanRmK","role":"assistant","time":{"created":1796611938952},"parentID":"msg_24e6a72e7001H2FThrK8gZ6s82","modelID":"fake-model","providerID":"fake","mode":"build","agent":"build","path":{"cwd":"/home/user/project","root":"/home/user/project"},"cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}}}}');
INSERT INTO "event" VALUES('evt_24e6a9ae6001DQDq7w8zsm4caS','ses_db1958deeffe24Ns5674zanRmK',20,'session.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","info":{"id":"ses_db1958deeffe24Ns5674zanRmK","slug":"quick-eagle","projectID":"c0cf56d18648ca859930f6122d13725063b2e138","directory":"/home/user/project","path":"","summary":{"additions":0,"deletions":0,"files":0},"cost":0,"tokens":{"input":1020,"output":40,"reasoning":0,"cache":{"read":0,"write":0}},"title":"Demo project chores","agent":"build","model":{"id":"fake-model","providerID":"fake","variant":"default"},"version":"1.18.33","time":{"created":1796611928593,"updated":1796611939044},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]}}');
INSERT INTO "event" VALUES('evt_24e6a9bdd001rsj7cpO4RyqEJw','ses_db1958deeffe24Ns5674zanRmK',21,'message.part.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","part":{"id":"prt_24e6a9bdd0014AfNcVefsdnaNX","sessionID":"ses_db1958deeffe24Ns5674zanRmK","messageID":"msg_24e6a9a88001sBr5UqR55f01qS","type":"step-start","snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d"},"time":1796611939293}');
INSERT INTO "event" VALUES('evt_24e6a9be9001tXuixKbHdqe2O1','ses_db1958deeffe24Ns5674zanRmK',22,'message.part.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","part":{"id":"prt_24e6a9be8001rvw7g0fGK8vFWG","sessionID":"ses_db1958deeffe24Ns5674zanRmK","messageID":"msg_24e6a9a88001sBr5UqR55f01qS","type":"text","text":"","time":{"start":1796611939304}},"time":1796611939304}');
INSERT INTO "event" VALUES('evt_24e6a9bf2001W2l6MyoTXz89VV','ses_db1958deeffe24Ns5674zanRmK',23,'message.part.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","part":{"id":"prt_24e6a9be8001rvw7g0fGK8vFWG","sessionID":"ses_db1958deeffe24Ns5674zanRmK","messageID":"msg_24e6a9a88001sBr5UqR55f01qS","type":"text","text":"The helper counted 6 lines in calc.py.","time":{"start":1796611939304,"end":1796611939314}},"time":1796611939314}');
INSERT INTO "event" VALUES('evt_24e6a9c36001GhklbLUYtIHeFs','ses_db19574fbffeyYZFTHInOaHgJc',27,'message.updated.1','{"sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","info":{"id":"msg_24e6a8b540014ZwVywHMEUoj8T","sessionID":"ses_db19574fbffeyYZFTHInOaHgJc","role":"user","time":{"created":1796611935062},"summary":{"diffs":[]},"agent":"general","model":{"providerID":"fake","modelID":"fake-model"}}}');
INSERT INTO "event" VALUES('evt_24e6a9ce600161UPhsOZIB8vxO','ses_db1958deeffe24Ns5674zanRmK',24,'message.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","info":{"id":"msg_24e6a72e7001H2FThrK8gZ6s82","sessionID":"ses_db1958deeffe24Ns5674zanRmK","role":"user","time":{"created":1796611928807},"summary":{"diffs":[]},"agent":"build","model":{"providerID":"fake","modelID":"fake-model"}}}');
INSERT INTO "event" VALUES('evt_24e6a9d7f001cfgTOxI326b6KH','ses_db1958deeffe24Ns5674zanRmK',25,'message.part.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","part":{"id":"prt_24e6a9d7f001xCN9ejJVETRhxK","sessionID":"ses_db1958deeffe24Ns5674zanRmK","messageID":"msg_24e6a9a88001sBr5UqR55f01qS","type":"step-finish","reason":"stop","snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d","cost":0,"tokens":{"total":1060,"input":1040,"output":20,"reasoning":0,"cache":{"read":0,"write":0}}},"time":1796611939711}');
INSERT INTO "event" VALUES('evt_24e6a9d85001a1uvGMpkcborGU','ses_db1958deeffe24Ns5674zanRmK',26,'message.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","info":{"id":"msg_24e6a9a88001sBr5UqR55f01qS","sessionID":"ses_db1958deeffe24Ns5674zanRmK","role":"assistant","time":{"created":1796611938952},"parentID":"msg_24e6a72e7001H2FThrK8gZ6s82","modelID":"fake-model","providerID":"fake","mode":"build","agent":"build","path":{"cwd":"/home/user/project","root":"/home/user/project"},"cost":0,"tokens":{"total":1060,"input":1040,"output":20,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"stop"}}');
INSERT INTO "event" VALUES('evt_24e6aa211001Xa5w72SFzL6rGW','ses_db1958deeffe24Ns5674zanRmK',27,'message.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","info":{"id":"msg_24e6a9a88001sBr5UqR55f01qS","sessionID":"ses_db1958deeffe24Ns5674zanRmK","role":"assistant","time":{"created":1796611938952,"completed":1796611940881},"parentID":"msg_24e6a72e7001H2FThrK8gZ6s82","modelID":"fake-model","providerID":"fake","mode":"build","agent":"build","path":{"cwd":"/home/user/project","root":"/home/user/project"},"cost":0,"tokens":{"total":1060,"input":1040,"output":20,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"stop"}}');
INSERT INTO "event" VALUES('evt_24e6aa2be001xgR1v1u2TpV7XE','ses_db1958deeffe24Ns5674zanRmK',28,'session.updated.1','{"sessionID":"ses_db1958deeffe24Ns5674zanRmK","info":{"id":"ses_db1958deeffe24Ns5674zanRmK","slug":"quick-eagle","projectID":"c0cf56d18648ca859930f6122d13725063b2e138","directory":"/home/user/project","path":"","summary":{"additions":0,"deletions":0,"files":0},"cost":0,"tokens":{"input":2060,"output":60,"reasoning":0,"cache":{"read":0,"write":0}},"title":"Demo project chores","agent":"build","model":{"id":"fake-model","providerID":"fake","variant":"default"},"version":"1.18.33","time":{"created":1796611928593,"updated":1796611941050},"permission":[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]}}');
CREATE TABLE `event_sequence` (
          `aggregate_id` text PRIMARY KEY,
          `seq` integer NOT NULL,
          `owner_id` text
        );
INSERT INTO "event_sequence" VALUES('ses_db1958deeffe24Ns5674zanRmK',28,NULL);
INSERT INTO "event_sequence" VALUES('ses_db19574fbffeyYZFTHInOaHgJc',27,NULL);
CREATE TABLE `message` (
          `id` text PRIMARY KEY,
          `session_id` text NOT NULL,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          `data` text NOT NULL,
          CONSTRAINT `fk_message_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE
        );
INSERT INTO "message" VALUES('msg_24e6a72e7001H2FThrK8gZ6s82','ses_db1958deeffe24Ns5674zanRmK',1796611928807,1796611939560,'{"role":"user","time":{"created":1796611928807},"agent":"build","model":{"providerID":"fake","modelID":"fake-model"},"summary":{"diffs":[]}}');
INSERT INTO "message" VALUES('msg_24e6a7a7b001IIBJdPDkrh36vg','ses_db1958deeffe24Ns5674zanRmK',1796611930747,1796611938945,'{"parentID":"msg_24e6a72e7001H2FThrK8gZ6s82","role":"assistant","mode":"build","agent":"build","path":{"cwd":"/home/user/project","root":"/home/user/project"},"cost":0,"tokens":{"total":1060,"input":1020,"output":40,"reasoning":0,"cache":{"write":0,"read":0}},"modelID":"fake-model","providerID":"fake","time":{"created":1796611930747,"completed":1796611938939},"finish":"tool-calls"}');
INSERT INTO "message" VALUES('msg_24e6a8b540014ZwVywHMEUoj8T','ses_db19574fbffeyYZFTHInOaHgJc',1796611935062,1796611939385,'{"role":"user","time":{"created":1796611935062},"agent":"general","model":{"providerID":"fake","modelID":"fake-model"},"summary":{"diffs":[]}}');
INSERT INTO "message" VALUES('msg_24e6a8bf2001nxf5vMKK8hceKt','ses_db19574fbffeyYZFTHInOaHgJc',1796611935218,1796611937114,'{"parentID":"msg_24e6a8b540014ZwVywHMEUoj8T","role":"assistant","mode":"general","agent":"general","path":{"cwd":"/home/user/project","root":"/home/user/project"},"cost":0,"tokens":{"total":1040,"input":1020,"output":20,"reasoning":0,"cache":{"write":0,"read":0}},"modelID":"fake-model","providerID":"fake","time":{"created":1796611935218,"completed":1796611937112},"finish":"tool-calls"}');
INSERT INTO "message" VALUES('msg_24e6a9363001qL4p3rqCPOQAK4','ses_db19574fbffeyYZFTHInOaHgJc',1796611937123,1796611937972,'{"parentID":"msg_24e6a8b540014ZwVywHMEUoj8T","role":"assistant","mode":"general","agent":"general","path":{"cwd":"/home/user/project","root":"/home/user/project"},"cost":0,"tokens":{"total":1060,"input":1040,"output":20,"reasoning":0,"cache":{"write":0,"read":0}},"modelID":"fake-model","providerID":"fake","time":{"created":1796611937123,"completed":1796611937970},"finish":"stop"}');
INSERT INTO "message" VALUES('msg_24e6a9a88001sBr5UqR55f01qS','ses_db1958deeffe24Ns5674zanRmK',1796611938952,1796611940907,'{"parentID":"msg_24e6a72e7001H2FThrK8gZ6s82","role":"assistant","mode":"build","agent":"build","path":{"cwd":"/home/user/project","root":"/home/user/project"},"cost":0,"tokens":{"total":1060,"input":1040,"output":20,"reasoning":0,"cache":{"write":0,"read":0}},"modelID":"fake-model","providerID":"fake","time":{"created":1796611938952,"completed":1796611940881},"finish":"stop"}');
CREATE TABLE "migration" (id TEXT PRIMARY KEY, time_completed INTEGER NOT NULL);
INSERT INTO "migration" VALUES('20260127222353_familiar_lady_ursula',1796611925979);
INSERT INTO "migration" VALUES('20260211171708_add_project_commands',1796611925979);
INSERT INTO "migration" VALUES('20260213144116_wakeful_the_professor',1796611925979);
INSERT INTO "migration" VALUES('20260225215848_workspace',1796611925980);
INSERT INTO "migration" VALUES('20260227213759_add_session_workspace_id',1796611925980);
INSERT INTO "migration" VALUES('20260228203230_blue_harpoon',1796611925980);
INSERT INTO "migration" VALUES('20260303231226_add_workspace_fields',1796611925982);
INSERT INTO "migration" VALUES('20260309230000_move_org_to_state',1796611925982);
INSERT INTO "migration" VALUES('20260312043431_session_message_cursor',1796611925983);
INSERT INTO "migration" VALUES('20260323234822_events',1796611925983);
INSERT INTO "migration" VALUES('20260410174513_workspace-name',1796611925983);
INSERT INTO "migration" VALUES('20260413175956_chief_energizer',1796611925983);
INSERT INTO "migration" VALUES('20260423070820_add_icon_url_override',1796611925983);
INSERT INTO "migration" VALUES('20260427172553_slow_nightmare',1796611925983);
INSERT INTO "migration" VALUES('20260428004200_add_session_path',1796611925983);
INSERT INTO "migration" VALUES('20260501142318_next_venus',1796611925983);
INSERT INTO "migration" VALUES('20260504145000_add_sync_owner',1796611925983);
INSERT INTO "migration" VALUES('20260507164347_add_workspace_time',1796611925984);
INSERT INTO "migration" VALUES('20260510033149_session_usage',1796611925984);
INSERT INTO "migration" VALUES('20260511000411_data_migration_state',1796611925985);
INSERT INTO "migration" VALUES('20260511173437_session-metadata',1796611925985);
INSERT INTO "migration" VALUES('20260601010001_normalize_storage_paths',1796611925985);
INSERT INTO "migration" VALUES('20260601202201_amazing_prowler',1796611925985);
INSERT INTO "migration" VALUES('20260602002951_lowly_union_jack',1796611925985);
INSERT INTO "migration" VALUES('20260602182828_add_project_directories',1796611925985);
INSERT INTO "migration" VALUES('20260603001617_session_message_projection_indexes',1796611925985);
INSERT INTO "migration" VALUES('20260603040000_session_message_projection_order',1796611925985);
INSERT INTO "migration" VALUES('20260603141458_session_input_inbox',1796611925986);
INSERT INTO "migration" VALUES('20260603160727_jittery_ezekiel_stane',1796611925986);
INSERT INTO "migration" VALUES('20260604172448_event_sourced_session_input',1796611925986);
INSERT INTO "migration" VALUES('20260605003541_add_session_context_snapshot',1796611925986);
INSERT INTO "migration" VALUES('20260605042240_add_context_epoch_agent',1796611925986);
INSERT INTO "migration" VALUES('20260611035744_credential',1796611925986);
INSERT INTO "migration" VALUES('20260611192811_lush_chimera',1796611925986);
INSERT INTO "migration" VALUES('20260612174303_project_dir_strategy',1796611925987);
INSERT INTO "migration" VALUES('20260622142730_simplify_session_context_epoch',1796611925987);
INSERT INTO "migration" VALUES('20260622170816_reset_v2_session_state',1796611925987);
INSERT INTO "migration" VALUES('20260622202450_simplify_session_input',1796611925987);
CREATE TABLE `part` (
          `id` text PRIMARY KEY,
          `message_id` text NOT NULL,
          `session_id` text NOT NULL,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          `data` text NOT NULL,
          CONSTRAINT `fk_part_message_id_message_id_fk` FOREIGN KEY (`message_id`) REFERENCES `message`(`id`) ON DELETE CASCADE
        );
INSERT INTO "part" VALUES('prt_24e6a72ef0012PZm3HgxuTUcGR','msg_24e6a72e7001H2FThrK8gZ6s82','ses_db1958deeffe24Ns5674zanRmK',1796611928824,1796611928827,'{"type":"text","text":"Ask a helper agent to count the lines of calc.py, then report."}');
INSERT INTO "part" VALUES('prt_24e6a8aaf001IbNEU6H07JnPnH','msg_24e6a7a7b001IIBJdPDkrh36vg','ses_db1958deeffe24Ns5674zanRmK',1796611934895,1796611934898,'{"snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d","type":"step-start"}');
INSERT INTO "part" VALUES('prt_24e6a8ab600147ULFCLrKV92uK','msg_24e6a7a7b001IIBJdPDkrh36vg','ses_db1958deeffe24Ns5674zanRmK',1796611934903,1796611935180,'{"type":"text","text":"I''ll hand this to a helper.","time":{"start":1796611934903,"end":1796611935177}}');
INSERT INTO "part" VALUES('prt_24e6a8ace001O0erVICRoAP1St','msg_24e6a7a7b001IIBJdPDkrh36vg','ses_db1958deeffe24Ns5674zanRmK',1796611934926,1796611938007,'{"type":"tool","tool":"task","callID":"call_000021","state":{"status":"completed","input":{"description":"Count calc.py lines","subagent_type":"general","prompt":"Count the lines of calc.py and answer with the number."},"output":"<task id=\"ses_db19574fbffeyYZFTHInOaHgJc\" state=\"completed\">\n<task_result>\n6\n</task_result>\n</task>","metadata":{"parentSessionId":"ses_db1958deeffe24Ns5674zanRmK","sessionId":"ses_db19574fbffeyYZFTHInOaHgJc","model":{"modelID":"fake-model","providerID":"fake"},"truncated":false},"title":"Count calc.py lines","time":{"start":1796611935016,"end":1796611937999}}}');
INSERT INTO "part" VALUES('prt_24e6a8b6e001Qp5O7L65ouRjrt','msg_24e6a8b540014ZwVywHMEUoj8T','ses_db19574fbffeyYZFTHInOaHgJc',1796611935103,1796611935110,'{"type":"text","text":"Count the lines of calc.py and answer with the number."}');
INSERT INTO "part" VALUES('prt_24e6a8d77001jTBtvxFa3FU50r','msg_24e6a8bf2001nxf5vMKK8hceKt','ses_db19574fbffeyYZFTHInOaHgJc',1796611935607,1796611935613,'{"snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d","type":"step-start"}');
INSERT INTO "part" VALUES('prt_24e6a8d7f0017nftIFdkkk2X7V','msg_24e6a8bf2001nxf5vMKK8hceKt','ses_db19574fbffeyYZFTHInOaHgJc',1796611935615,1796611936203,'{"type":"tool","tool":"bash","callID":"call_000023","state":{"status":"completed","input":{"command":"wc -l calc.py","description":"Counts lines"},"output":"6 calc.py\n","metadata":{"output":"6 calc.py\n","exit":0,"truncated":false},"title":"wc -l calc.py","time":{"start":1796611935651,"end":1796611936200}}}');
INSERT INTO "part" VALUES('prt_24e6a9213001H7oGBiUWn7zucE','msg_24e6a8bf2001nxf5vMKK8hceKt','ses_db19574fbffeyYZFTHInOaHgJc',1796611936788,1796611936790,'{"reason":"tool-calls","snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d","type":"step-finish","tokens":{"total":1040,"input":1020,"output":20,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0}');
INSERT INTO "part" VALUES('prt_24e6a9473001Q68053DFQCIpax','msg_24e6a9363001qL4p3rqCPOQAK4','ses_db19574fbffeyYZFTHInOaHgJc',1796611937395,1796611937399,'{"snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d","type":"step-start"}');
INSERT INTO "part" VALUES('prt_24e6a947a0017x6e1W225TgDYP','msg_24e6a9363001qL4p3rqCPOQAK4','ses_db19574fbffeyYZFTHInOaHgJc',1796611937402,1796611937408,'{"type":"text","text":"6","time":{"start":1796611937402,"end":1796611937407}}');
INSERT INTO "part" VALUES('prt_24e6a95670015kBxKYCkaoax9z','msg_24e6a9363001qL4p3rqCPOQAK4','ses_db19574fbffeyYZFTHInOaHgJc',1796611937639,1796611937641,'{"reason":"stop","snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d","type":"step-finish","tokens":{"total":1060,"input":1040,"output":20,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0}');
INSERT INTO "part" VALUES('prt_24e6a98e80014yhzj1GQz9A34E','msg_24e6a7a7b001IIBJdPDkrh36vg','ses_db1958deeffe24Ns5674zanRmK',1796611938536,1796611938539,'{"reason":"tool-calls","snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d","type":"step-finish","tokens":{"total":1060,"input":1020,"output":40,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0}');
INSERT INTO "part" VALUES('prt_24e6a9bdd0014AfNcVefsdnaNX','msg_24e6a9a88001sBr5UqR55f01qS','ses_db1958deeffe24Ns5674zanRmK',1796611939293,1796611939295,'{"snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d","type":"step-start"}');
INSERT INTO "part" VALUES('prt_24e6a9be8001rvw7g0fGK8vFWG','msg_24e6a9a88001sBr5UqR55f01qS','ses_db1958deeffe24Ns5674zanRmK',1796611939304,1796611939316,'{"type":"text","text":"The helper counted 6 lines in calc.py.","time":{"start":1796611939304,"end":1796611939314}}');
INSERT INTO "part" VALUES('prt_24e6a9d7f001xCN9ejJVETRhxK','msg_24e6a9a88001sBr5UqR55f01qS','ses_db1958deeffe24Ns5674zanRmK',1796611939711,1796611939714,'{"reason":"stop","snapshot":"3e311fc3b5931b16ce9089846292da4b2701565d","type":"step-finish","tokens":{"total":1060,"input":1040,"output":20,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0}');
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
INSERT INTO "project" VALUES('c0cf56d18648ca859930f6122d13725063b2e138','/home/user/project','git',NULL,NULL,NULL,NULL,1796611926958,1796611926958,NULL,'[]',NULL);
CREATE TABLE `project_directory` (
          `project_id` text NOT NULL,
          `directory` text NOT NULL,
          `type` text,
          `strategy` text,
          `time_created` integer NOT NULL,
          CONSTRAINT `project_directory_pk` PRIMARY KEY(`project_id`, `directory`),
          CONSTRAINT `fk_project_directory_project_id_project_id_fk` FOREIGN KEY (`project_id`) REFERENCES `project`(`id`) ON DELETE CASCADE
        );
INSERT INTO "project_directory" VALUES('c0cf56d18648ca859930f6122d13725063b2e138','/home/user/project',NULL,NULL,1796611926963);
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
INSERT INTO "session" VALUES('ses_db1958deeffe24Ns5674zanRmK','c0cf56d18648ca859930f6122d13725063b2e138',NULL,NULL,'quick-eagle','/home/user/project','','Demo project chores','1.18.33',NULL,0,0,0,NULL,NULL,0.0,2060,60,0,0,0,NULL,'[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]','build','{"id":"fake-model","providerID":"fake","variant":"default"}',1796611928593,1796611941050,NULL,NULL);
INSERT INTO "session" VALUES('ses_db19574fbffeyYZFTHInOaHgJc','c0cf56d18648ca859930f6122d13725063b2e138',NULL,'ses_db1958deeffe24Ns5674zanRmK','nimble-harbor','/home/user/project','','Count calc.py lines (@general subagent)','1.18.33',NULL,0,0,0,NULL,NULL,0.0,2060,40,0,0,0,NULL,'[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"},{"permission":"task","pattern":"*","action":"deny"}]','general','{"id":"fake-model","providerID":"fake","variant":"default"}',1796611934980,1796611938060,NULL,NULL);
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
